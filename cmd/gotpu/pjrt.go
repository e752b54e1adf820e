//go:build pjrt

package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/backend/pjrt"
)

// pjrtReport is the --json output of `gotpu pjrt`. Keys are stable.
type pjrtReport struct {
	Plugins     []pjrt.Status   `json:"plugins"`
	Unsupported []pjrtUnsupport `json:"unsupported_ops"`
	CacheDir    string          `json:"cache_dir"`
}

type pjrtUnsupport struct {
	Op     string `json:"op"`
	Reason string `json:"reason"`
}

func collectPJRT(open []string) (pjrtReport, error) {
	for _, name := range open {
		if err := pjrt.Open(name); err != nil {
			return pjrtReport{}, err
		}
	}
	r := pjrtReport{Plugins: pjrt.Statuses(), Unsupported: []pjrtUnsupport{}, CacheDir: pjrt.CacheDir()}
	u := pjrt.Unsupported()
	for _, n := range pjrt.UnsupportedNames() {
		r.Unsupported = append(r.Unsupported, pjrtUnsupport{Op: n, Reason: u[n]})
	}
	return r, nil
}

func writePJRT(w io.Writer, r pjrtReport) {
	fmt.Fprintln(w, "PJRT plugins:")
	for _, p := range r.Plugins {
		if !p.Loaded {
			fmt.Fprintf(w, "  %-5s not loaded: %s\n", p.Name, p.Error)
			continue
		}
		fmt.Fprintf(w, "  %-5s %s (platform %s %s, PJRT C API %s)\n", p.Name, p.Path, p.Platform, p.PlatformVersion, p.APIVersion)
		for i, d := range p.Devices {
			fmt.Fprintf(w, "        %s:%d  %s (id %d)\n", p.Name, i, d.Kind, d.ID)
		}
	}
	fmt.Fprintf(w, "fetch cache: %s\n", r.CacheDir)
	fmt.Fprintln(w, "primitives the pjrt backends do not run:")
	for _, u := range r.Unsupported {
		fmt.Fprintf(w, "  %-16s %s\n", u.Op, u.Reason)
	}
}

func init() {
	var asJSON bool
	var open []string
	cmd := &cobra.Command{
		Use:   "pjrt",
		Short: "List PJRT plugins (xla, tpu, cuda), their devices, and the ops they do not run",
		Long: `List the PJRT plugins this build (tag pjrt) found, with their paths, platform
versions and devices, or why each is not loaded, and the primitives the PJRT
backends do not run with the reason.

Plugins are searched in GOTPU_PJRT_PLUGIN (name=path[,name=path]), python
site-packages, the fetch cache (tools/pjrt/fetch.sh) and the library path.
--open NAME makes a plugin that fails to load an error (exit status 1).

With --json, one object with the stable keys: plugins [{name, loaded, path,
platform, platform_version, api_version, devices [{id, kind, debug}], error}],
unsupported_ops [{op, reason}], cache_dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := collectPJRT(open)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			writePJRT(cmd.OutOrStdout(), r)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().StringSliceVar(&open, "open", nil, "plugins that must load (an error otherwise)")
	rootCmd.AddCommand(cmd)
}
