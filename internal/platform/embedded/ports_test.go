package embedded

import (
	"slices"
	"testing"
)

// Two servers starting at the same moment on one machine (a second worker, parallel tests) both
// found the same internal port free and both bound it; one exited ("address already in use").
// A pick is claimed until the server has bound it: no other pick returns it meanwhile, and
// released, it can be picked again.
func TestInternalPortsAreClaimedUntilBound(t *testing.T) {
	first, release, err := freePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range first {
		if _, ok := claimPort(port); ok {
			t.Fatalf("port %d claimed twice", port)
		}
	}
	for range 20 {
		again, releaseAgain, err := freePorts(4)
		if err != nil {
			t.Fatal(err)
		}
		for _, port := range again {
			if slices.Contains(first, port) {
				t.Fatalf("port %d picked while another server's start holds it", port)
			}
		}
		releaseAgain()
	}
	release()
	for _, port := range first {
		f, ok := claimPort(port)
		if !ok {
			t.Fatalf("port %d still claimed after its release", port)
		}
		_ = f.Close()
	}
}
