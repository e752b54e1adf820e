package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/backend/cpu"
)

// versionReport is the --json output of `gotpu version`. Keys are stable.
type versionReport struct {
	Version   string `json:"version"`          // gotpu.Version
	GoVersion string `json:"go_version"`       // runtime.Version()
	OS        string `json:"os"`               // GOOS
	Arch      string `json:"arch"`             // GOARCH
	CPULevel  string `json:"cpu_kernel_level"` // "generic", "avx2", "avx512", "avx512bf16" or "amx"
	Revision  string `json:"revision"`         // VCS commit of the build ("" when unknown)
	Modified  bool   `json:"modified"`         // the build had uncommitted changes
	PJRT      bool   `json:"pjrt"`             // built with -tags pjrt
}

// pjrtBuilt is set by the pjrt build.
var pjrtBuilt bool

func collectVersion() versionReport {
	r := versionReport{Version: gotpu.Version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPULevel: cpu.CPULevel(), PJRT: pjrtBuilt}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				r.Revision = s.Value
			case "vcs.modified":
				r.Modified = s.Value == "true"
			}
		}
	}
	return r
}

// String is the one-line form `gotpu version` and `gotpu --version` print.
func (r versionReport) String() string {
	s := fmt.Sprintf("gotpu %s (%s %s/%s, CPU kernel level %s", r.Version, r.GoVersion, r.OS, r.Arch, r.CPULevel)
	if r.PJRT {
		s += ", pjrt"
	}
	if r.Revision != "" {
		s += ", revision " + r.Revision
		if r.Modified {
			s += "+modified"
		}
	}
	return s + ")"
}

func init() {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the gotpu version, Go version, GOOS/GOARCH and CPU kernel level",
		Long: `Print one line: the gotpu version, the Go version it was built with,
GOOS/GOARCH, the CPU kernel level in use (GOTPU_CPU_LEVEL caps it), whether
this is a -tags pjrt build, and the VCS revision when the build recorded one.
gotpu --version prints the same line.

With --json, one JSON object with the stable keys: version, go_version, os,
arch, cpu_kernel_level, revision ("" when unknown), modified, pjrt.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := collectVersion()
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), r)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	rootCmd.AddCommand(cmd)
	rootCmd.Version = gotpu.Version
	rootCmd.SetVersionTemplate(collectVersion().String() + "\n")
}
