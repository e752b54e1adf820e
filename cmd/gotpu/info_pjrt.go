//go:build pjrt

package main

import (
	"fmt"

	"github.com/gotpu/gotpu/backend/pjrt"
)

func init() {
	// XLA_FLAGS shows what the plugin reads: the pjrt backend adds
	// --xla_cpu_enable_fast_min_max=false unless the user set that flag.
	envVars = append(envVars, "GOTPU_PJRT_PLUGIN", "GOTPU_PJRT_CACHE", "GOTPU_PJRT_AUTOLOAD", "XLA_FLAGS")
	infoPlugins = func() (any, []string) {
		st := pjrt.Statuses()
		var lines []string
		for _, s := range st {
			if s.Loaded {
				lines = append(lines, fmt.Sprintf("%-5s %s %s (%d devices) %s", s.Name, s.Platform, s.PlatformVersion, len(s.Devices), s.Path))
			} else {
				lines = append(lines, fmt.Sprintf("%-5s not loaded: %s", s.Name, s.Error))
			}
		}
		return st, lines
	}
}
