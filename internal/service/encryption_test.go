package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/encryption"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

// Issue 13: with payload encryption on, what the cluster stores (the intent's input in its
// history, its memo, its search attributes) holds no message text; intentq's own clients read
// it decrypted, and the worker's codec endpoint decrypts for the Web UI.
func TestPayloadEncryptionKeepsTextOffTheCluster(t *testing.T) {
	cfg := testenv.Config(t)
	cfg.Temporal.Encryption.Mode = config.EncryptionOn
	cfg.Temporal.Encryption.KeyFile = filepath.Join(t.TempDir(), "encryption.keys")
	if _, err := encryption.AppendKey(cfg.Temporal.Encryption.KeyFile); err != nil {
		t.Fatal(err)
	}
	cfg.Ingest.Token = config.Secret("tok")
	cfg.Reminders.FirstAfter = time.Hour
	svc, _ := startService(t, cfg)
	ctx := context.Background()

	const text = "the launch code is 8841, tell nobody"
	req, _ := http.NewRequest(http.MethodPost, "http://"+cfg.Ingest.Listen+"/v1/intents",
		strings.NewReader(`{"chat_id":"5","message_id":9,"text":"`+text+`"}`))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("record: %v %v", err, resp)
	}
	resp.Body.Close()
	id := workflows.IntentID("5", "9")

	// What the cluster holds, read without the key (with the access token the embedded server
	// requires).
	raw, err := client.Dial(client.Options{HostPort: cfg.TemporalAddress(), Namespace: cfg.Temporal.Namespace,
		Credentials: client.NewAPIKeyStaticCredentials(svc.Token()), ConnectionOptions: client.ConnectionOptions{TLSDisabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	iter := raw.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	first, err := iter.Next()
	if err != nil {
		t.Fatal(err)
	}
	input := first.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(input) == 0 || string(input[0].GetMetadata()["encoding"]) != encryption.Encoding {
		t.Fatalf("the input is not encrypted: %v", input)
	}
	history, _ := protojson.Marshal(first)
	if bytes.Contains(history, []byte("launch code")) {
		t.Error("the history holds the message text")
	}
	var desc *workflowservice.DescribeWorkflowExecutionResponse
	waitUntil(t, "the memo", 10*time.Second, func() bool {
		desc, err = raw.DescribeWorkflowExecution(ctx, id, "")
		return err == nil && len(desc.GetWorkflowExecutionInfo().GetMemo().GetFields()) > 0
	})
	info, _ := protojson.Marshal(desc.GetWorkflowExecutionInfo())
	if bytes.Contains(info, []byte("launch")) || bytes.Contains(info, []byte("tell nobody")) {
		t.Errorf("memo or search attributes hold the message text: %s", info)
	}
	for _, p := range desc.GetWorkflowExecutionInfo().GetMemo().GetFields() {
		if string(p.GetMetadata()["encoding"]) != encryption.Encoding {
			t.Errorf("memo field not encrypted: %v", p)
		}
	}

	// intentq's clients read it decrypted.
	if got, err := intent.Text(ctx, svc.Client(), id); err != nil || got != text {
		t.Errorf("text %q %v", got, err)
	}
	waitUntil(t, "the intent listed with its snippet", 20*time.Second, func() bool {
		list, err := intent.List(ctx, svc.Client(), intent.Filter{Status: workflows.StatusPending})
		return err == nil && len(list) == 1 && strings.HasPrefix(list[0].Snippet, "the launch")
	})

	// The codec endpoint decrypts for the Web UI, for the holder of the access token only.
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: input})
	resp, err = http.Post("http://"+cfg.Ingest.Listen+"/codec/decode", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("codec without the access token answered %d, want 401", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodPost, "http://"+cfg.Ingest.Listen+"/codec/decode", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+svc.Token())
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	decoded, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out commonpb.Payloads
	if err := protojson.Unmarshal(decoded, &out); err != nil || len(out.Payloads) != 1 {
		t.Fatalf("codec answered %d %s", resp.StatusCode, decoded)
	}
	var in workflows.IntentInput
	if err := json.Unmarshal(out.Payloads[0].GetData(), &in); err != nil || in.Text != text {
		t.Errorf("decoded input %+v %v", in, err)
	}
}
