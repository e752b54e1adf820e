//go:build pjrt

package pjrt

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestLibTPUWithoutTPU loads the libtpu wheel's plugin (GOTPU_TEST_LIBTPU
// names its libtpu.so; `pip download libtpu --no-deps` and unzip) on this
// TPU-less machine: opening "tpu" must be an error wrapping ErrNoDevices
// that says so, never a crash. TPU_SKIP_MDS_QUERY=1 keeps libtpu from
// retrying the GCP metadata server for minutes.
func TestLibTPUWithoutTPU(t *testing.T) {
	path := os.Getenv("GOTPU_TEST_LIBTPU")
	if path == "" {
		t.Skip("GOTPU_TEST_LIBTPU not set (libtpu is a 137 MB wheel)")
	}
	t.Setenv("TPU_SKIP_MDS_QUERY", "1")
	err := OpenPath("tpu", path)
	if !errors.Is(err, ErrNoDevices) || !strings.Contains(err.Error(), "no tpu device") {
		t.Fatalf("libtpu on a machine without a TPU: %v", err)
	}
}
