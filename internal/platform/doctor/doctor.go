// Package doctor checks that an intentq deployment works end to end and says, for each part,
// what is wrong and what to do about it (SPEC I10).
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/workflows"
)

// Result is the outcome of one check.
type Result struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Status is ok, warn (a setup step not done yet: no tmux pane yet, hooks not installed),
	// fail, or skip (not checked because of an earlier failure); see Level.
	Status string `json:"status"`
	Detail string `json:"detail"`
	Hint   string `json:"hint,omitempty"`
}

// Statuses of a check.
const (
	StatusOK   = "ok"
	StatusWarn = "warn"
	StatusFail = "fail"
	StatusSkip = "skip"
)

// Level is the check's status: Status when set, else ok or fail by OK.
func (r Result) Level() string {
	switch {
	case r.Status != "":
		return r.Status
	case r.OK:
		return StatusOK
	default:
		return StatusFail
	}
}

// Report is every check's result, in the order they ran.
type Report []Result

// OK reports whether no check failed: warnings (setup steps not done yet) and checks skipped
// because of a warning are not failures.
func (r Report) OK() bool { return len(r.Failing()) == 0 }

// Failing are the checks that failed.
func (r Report) Failing() Report {
	var out Report
	for _, res := range r {
		if res.Level() == StatusFail {
			out = append(out, res)
		}
	}
	return out
}

// settle fills in every result's Status, for JSON readers.
func (r Report) settle() Report {
	for i := range r {
		r[i].Status = r[i].Level()
	}
	return r
}

// WriteText prints one line per check: ok, WARN, FAIL or --, the check, what was found, and a
// hint.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, res := range r {
		status := map[string]string{StatusOK: "ok", StatusWarn: "WARN", StatusFail: "FAIL", StatusSkip: "--"}[res.Level()]
		line := fmt.Sprintf("%s\t%s\t%s", status, res.Name, res.Detail)
		if res.Hint != "" {
			line += "\thint: " + res.Hint
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// WriteJSON prints the report as a JSON array.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.settle())
}

// ConfigFailed is the report when the configuration itself cannot be loaded.
func ConfigFailed(err error) Report {
	return Report{{Name: "config", Detail: err.Error(), Hint: "fix the key named above in the file, env or flags"}}
}

// Run performs all checks against the deployment cfg describes.
func Run(ctx context.Context, cfg *config.Config, logger *zap.Logger) Report {
	r := Report{{Name: "config", OK: true, Detail: fmt.Sprintf("loaded; namespace %s, task queue %s", cfg.Temporal.Namespace, cfg.Temporal.TaskQueue)}}
	r = append(r, checkEncryption(cfg))
	r = append(r, Private(cfg)...)

	dialCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	c, err := tclient.Dial(dialCtx, cfg, logger)
	cancel()
	if err != nil {
		hint := "start the worker (make run), which runs the embedded server"
		if !cfg.EmbeddedServer() {
			hint = "check temporal.address, TLS and API key, and that the cluster is up"
		}
		r = append(r, Result{Name: "temporal", Detail: err.Error(), Hint: hint})
		r = append(r, notChecked("Temporal is unreachable", "namespace", "search attributes", "version floor", "worker", "probe")...)
	} else {
		defer c.Close()
		r = append(r, Result{Name: "temporal", OK: true, Detail: "reachable at " + cfg.TemporalAddress()})
		r = append(r, checkNamespace(ctx, c, cfg.Temporal.Namespace))
		r = append(r, checkSearchAttributes(ctx, c, cfg.Temporal.Namespace))
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		r = append(r, VersionFloor(fctx, c, cfg.Temporal.Namespace))
		cancel()
		worker := WorkerPolling(ctx, c, cfg.Temporal.TaskQueue)
		if sessions := WorkerPolling(ctx, c, workflows.SessionHostQueue(cfg.Temporal.TaskQueue, cfg.Host)); worker.OK && !sessions.OK {
			worker = sessions // the typing sessions' task queue on this host
		}
		r = append(r, worker)
		r = append(r, Hosts(ctx, c, cfg)...)
		if worker.OK {
			r = append(r, checkProbe(ctx, c, cfg.Temporal.TaskQueue))
		} else {
			r = append(r, notChecked("no worker polls the task queue", "probe")...)
		}
	}
	if cfg.EmbeddedServer() && cfg.Temporal.Embedded.UIPort != 0 {
		r = append(r, checkHTTP(ctx, "web ui", cfg.UIAddress()+"/namespaces/"+cfg.Temporal.Namespace+"/workflows",
			"the Web UI runs inside the worker: start it with make run; open it through the URL `starter ui` prints", uiToken(cfg)))
	}
	r = append(r, checkHTTP(ctx, "ingest", "http://"+cfg.Ingest.Listen+"/healthz",
		"the ingest endpoint runs inside the worker (ingest.listen): start it with make run", ""))
	return append(r, Local(ctx, cfg)...)
}

// checkEncryption says whether payloads are encrypted and with which key; an external cluster
// without encryption is a warning (message text reaches its database).
func checkEncryption(cfg *config.Config) Result {
	if !cfg.EncryptionOn() {
		if !cfg.EmbeddedServer() {
			return Result{Name: "encryption", Status: StatusWarn, Detail: "off: message text reaches the cluster's database",
				Hint: "temporal.encryption.mode: auto or on, with a keyring (starter keygen)"}
		}
		return Result{Name: "encryption", OK: true, Detail: "off (embedded server: payloads stay in data_dir)"}
	}
	k, err := tclient.Keyring(cfg)
	if err != nil {
		return Result{Name: "encryption", Detail: err.Error(), Hint: "starter keygen makes a keyring; every worker needs the same one"}
	}
	return Result{Name: "encryption", OK: true, Detail: "on: payloads encrypted with key " + k.Current()}
}

func notChecked(reason string, names ...string) Report {
	var r Report
	for _, n := range names {
		r = append(r, Result{Name: n, Status: StatusSkip, Detail: "not checked: " + reason})
	}
	return r
}

func checkNamespace(ctx context.Context, c client.Client, ns string) Result {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	desc, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	if err != nil {
		return Result{Name: "namespace", Detail: fmt.Sprintf("%s: %v", ns, err),
			Hint: "the worker creates it at start; on an external cluster create it or set temporal.namespace"}
	}
	retention := desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration()
	return Result{Name: "namespace", OK: true, Detail: fmt.Sprintf("%s present, retention %s", ns, retention)}
}

func checkSearchAttributes(ctx context.Context, c client.Client, ns string) Result {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	missing, err := tclient.MissingSearchAttributes(ctx, c, ns, workflows.SearchAttributes())
	if err != nil {
		return Result{Name: "search attributes", Detail: err.Error()}
	}
	if len(missing) > 0 {
		return Result{Name: "search attributes", Detail: "missing " + strings.Join(missing, ", "),
			Hint: "the worker adds them at start; on Temporal Cloud add them in the namespace settings"}
	}
	return Result{Name: "search attributes", OK: true, Detail: fmt.Sprintf("%d registered", len(workflows.SearchAttributes()))}
}

// WorkerPolling looks for a worker that polled both the workflow and the activity task queue
// recently. A worker that has just started needs a moment before its polls show, so the check
// looks again for a few seconds before it fails.
func WorkerPolling(ctx context.Context, c client.Client, taskQueue string) Result {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		res := describePollers(ctx, c, taskQueue)
		if res.OK || ctx.Err() != nil {
			return res
		}
		select {
		case <-ctx.Done():
			return res
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func describePollers(ctx context.Context, c client.Client, taskQueue string) Result {
	var identities []string
	for _, kind := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		fresh, err := activities.FreshPollers(ctx, c, taskQueue, kind)
		if err != nil {
			return Result{Name: "worker", Detail: err.Error()}
		}
		if len(fresh) == 0 {
			return Result{Name: "worker", Detail: fmt.Sprintf("no worker polls %s tasks on task queue %q", kindName(kind), taskQueue),
				Hint: "start the worker (make run, or ./worker with this config)"}
		}
		if kind == enumspb.TASK_QUEUE_TYPE_WORKFLOW {
			identities = fresh
		}
	}
	return Result{Name: "worker", OK: true, Detail: fmt.Sprintf("%d polling %q: %s", len(identities), taskQueue, strings.Join(identities, ", "))}
}

func kindName(k enumspb.TaskQueueType) string {
	if k == enumspb.TASK_QUEUE_TYPE_ACTIVITY {
		return "activity"
	}
	return "workflow"
}

// checkProbe runs the Probe workflow: proof that a worker executes workflows and activities.
func checkProbe(ctx context.Context, c client.Client, taskQueue string) Result {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s%s/%d", workflows.ProbeWorkflowIDPrefix, host, time.Now().UnixNano())
	started := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                taskQueue,
		WorkflowExecutionTimeout: 15 * time.Second,
	}, workflows.Probe)
	if err != nil {
		return Result{Name: "probe", Detail: "start probe workflow: " + err.Error()}
	}
	var info activities.WorkerInfo
	if err := run.Get(ctx, &info); err != nil {
		return Result{Name: "probe", Detail: fmt.Sprintf("probe workflow %s: %v", id, err),
			Hint: "the worker polls but does not finish tasks: read its logs"}
	}
	return Result{Name: "probe", OK: true, Detail: fmt.Sprintf("workflow and activity ran on %s in %s", info.Identity, time.Since(started).Round(time.Millisecond))}
}

// checkHTTP GETs url (with the access token as a bearer header when token is set) and wants 200.
func checkHTTP(ctx context.Context, name, url, hint, token string) Result {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Result{Name: name, Detail: err.Error()}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Result{Name: name, Detail: err.Error(), Hint: hint}
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Result{Name: name, Detail: fmt.Sprintf("%s answered %s", url, resp.Status), Hint: hint}
	}
	return Result{Name: name, OK: true, Detail: url + " answers 200"}
}
