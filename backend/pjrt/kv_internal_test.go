//go:build pjrt

package pjrt

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gotpu/gotpu/dist"
)

// TestXLAKeyValueCallbacksOnTCPStore drives the key-value callbacks a
// multi-process client is created with, through C as a plugin calls them,
// against dist's TCP rendezvous store: a put is visible to another
// connection under KVPrefix, gets copy the value and release the callback's
// buffer, a missing key is NOT_FOUND for try-get and DEADLINE_EXCEEDED for
// a get that times out, and a closed client's handle is an error.
// (XLA's CPU plugin 0.0.1 ignores node_id/num_nodes and never calls them.)
func TestXLAKeyValueCallbacksOnTCPStore(t *testing.T) {
	ctx := context.Background()
	srv, err := dist.ListenStore(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, err := dist.DialStore(ctx, srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := dist.DialStore(ctx, srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ha, hb := registerKV(a), registerKV(b)
	defer unregisterKV(hb)

	val := []byte("topology\x00bytes")
	if _, code, msg := kvCall(ha, 0, "node:0", val, 0); code != 0 {
		t.Fatalf("put: code %d %s", code, msg)
	}
	if got, err := b.Get(ctx, KVPrefix+"node:0", time.Second); err != nil || string(got) != string(val) {
		t.Fatalf("the store holds %q (%v) under %snode:0, want %q", got, err, KVPrefix, val)
	}
	for _, op := range []int{1, 2} {
		got, code, msg := kvCall(hb, op, "node:0", nil, time.Second)
		if code != 0 || string(got) != string(val) {
			t.Errorf("op %d: got %q, code %d %s", op, got, code, msg)
		}
	}
	// A blocking get waits for a later put.
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _, _ = kvCall(ha, 0, "late", []byte("v"), 0)
	}()
	if got, code, msg := kvCall(hb, 1, "late", nil, 5*time.Second); code != 0 || string(got) != "v" {
		t.Errorf("get of a key put later: %q, code %d %s", got, code, msg)
	}
	if _, code, msg := kvCall(hb, 2, "absent", nil, 0); code != pjrtNotFound || !strings.Contains(msg, KVPrefix+"absent") {
		t.Errorf("try-get of a missing key: code %d %q, want NOT_FOUND naming the key", code, msg)
	}
	if _, code, _ := kvCall(hb, 1, "absent", nil, 30*time.Millisecond); code != pjrtDeadlineExceeded {
		t.Errorf("get of a missing key: code %d, want DEADLINE_EXCEEDED", code)
	}
	unregisterKV(ha)
	if _, code, msg := kvCall(ha, 0, "k", []byte("v"), 0); code == 0 || !strings.Contains(msg, "closed") {
		t.Errorf("put through a closed client's handle: code %d %q", code, msg)
	}
}
