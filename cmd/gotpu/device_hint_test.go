package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/device"
)

// TestUnknownDeviceSaysWhatIsNeeded checks that --device tpu|cuda|xla
// explains itself: the default build names -tags pjrt and a plugin, the
// pjrt build passes on why the plugin did not load.
func TestUnknownDeviceSaysWhatIsNeeded(t *testing.T) {
	want := "need a build with -tags pjrt"
	if pjrtBuild {
		want = "pjrt: "
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"ops", "--device", "tpu"}},
		{[]string{"ops", "--device", "cuda:1"}},
		{[]string{"ops", "--device", "xla"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runCmd(t, tc.args...)
			if err == nil {
				t.Skipf("%s is available in this build", tc.args[2])
			}
			if !errors.Is(err, device.ErrUnknownDevice) || !strings.Contains(err.Error(), want) {
				t.Fatalf("err %v, want an unknown-device error mentioning %q", err, want)
			}
		})
	}
}
