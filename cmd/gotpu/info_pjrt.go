//go:build pjrt

package main

import (
	"fmt"

	"github.com/gotpu/gotpu/backend/pjrt"
)

func init() {
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
