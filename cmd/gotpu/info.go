package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/tensor"
)

// infoReport is the --json output of `gotpu info`. Keys are stable.
type infoReport struct {
	Version     string       `json:"version"`
	GoVersion   string       `json:"go_version"`
	OS          string       `json:"os"`
	Arch        string       `json:"arch"`
	NumCPU      int          `json:"num_cpu"`
	GOMAXPROCS  int          `json:"gomaxprocs"`
	CPUFeatures []string     `json:"cpu_features"`
	CPULevel    string       `json:"cpu_kernel_level"` // the CPU kernel level in use: "generic", "avx2", "avx512", "avx512bf16" or "amx"
	GEMM        gemmInfo     `json:"cpu_gemm_blocking"`
	Mode        string       `json:"mode"`
	Environment []envVar     `json:"environment"`
	Devices     []deviceInfo `json:"devices"`
	// Plugins lists the PJRT plugins (builds with the pjrt tag; absent
	// otherwise): name, loaded, path, platform, versions, devices, error.
	Plugins any `json:"pjrt_plugins,omitempty"`
}

// infoPlugins, when set (by the pjrt build), reports the PJRT plugins for
// gotpu info: the JSON value and one text line per plugin.
var infoPlugins func() (any, []string)

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Set   bool   `json:"set"`
	// unread marks a set GOTPU_ variable this binary does not read.
	unread bool
}

// gemmInfo is the CPU GEMM's cache blocking: the cache sizes it was
// derived from and each register-tiled kernel's tile and blocks.
type gemmInfo struct {
	L1dBytes int             `json:"l1d_bytes"`
	L2Bytes  int             `json:"l2_bytes"`
	L3Bytes  int             `json:"l3_bytes"`
	Source   string          `json:"source"` // "sysfs" or "default"
	Kernels  []cpu.GEMMBlock `json:"kernels"`
}

type deviceInfo struct {
	Name             string   `json:"name"`
	Description      string   `json:"description"`
	MemoryBytes      int64    `json:"memory_bytes"`
	DefaultPrecision string   `json:"default_precision"`
	Async            bool     `json:"async"`
	Features         []string `json:"features"`
	AllocatedBytes   int64    `json:"allocated_bytes"`
	ReservedBytes    int64    `json:"reserved_bytes"`
	PeakBytes        int64    `json:"peak_allocated_bytes"`
}

// envVars are the environment variables this gotpu binary reads, each
// listed by gotpu info whether set or not; the pjrt build adds its own
// (GOTPU_PJRT_*, XLA_FLAGS). Secrets (GOTPU_API_KEY) are left out.
var envVars = []string{"GOTPU_LAUNCH_BLOCKING", "GOTPU_DEFER_AND_FUSE", "GOTPU_DEBUG_NAN", "GOTPU_LOG", "GOTPU_CPU_LEVEL",
	"GOTPU_GEMM_KC", "GOTPU_GEMM_MC", "GOTPU_GEMM_NC", "GOTPU_GEMV_PARALLEL_MACS", "GOTPU_GEMV_WALK", "GOTPU_PREFETCH", "GOTPU_HUGEPAGES", "GOTPU_GGUF_LAYOUT",
	"GOTPU_CACHE_DIR", "GOTPU_CACHE_REMOTE", "GOTPU_CACHE_MODE", "GOTPU_CACHE_REMOTE_STRICT", "GOTPU_CACHE_MEMORY_BYTES", "GOTPU_MNIST_DIR",
	"GOTPU_BENCHREF", "GOTPU_MODELREF_PYTHON", "GOTPU_MODELREF_VENV"}

// collectEnv reports envVars, then any other GOTPU_ variable that is set
// (a typo, or one only tests read), sorted and marked unread.
func collectEnv(environ []string, lookup func(string) (string, bool)) []envVar {
	var out []envVar
	known := map[string]bool{"GOTPU_API_KEY": true}
	for _, k := range envVars {
		known[k] = true
		v, ok := lookup(k)
		out = append(out, envVar{Name: k, Value: v, Set: ok})
	}
	var extra []envVar
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GOTPU_") && !known[k] {
			extra = append(extra, envVar{Name: k, Value: v, Set: true, unread: true})
		}
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i].Name < extra[j].Name })
	return append(out, extra...)
}

func collectInfo() infoReport {
	r := infoReport{
		Version: gotpu.Version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPUFeatures: cpu.Features(), CPULevel: cpu.CPULevel(),
		Mode: tensor.CurrentMode().String(),
	}
	if r.CPUFeatures == nil {
		r.CPUFeatures = []string{}
	}
	caches, blocks := cpu.GEMMBlocking()
	if blocks == nil {
		blocks = []cpu.GEMMBlock{}
	}
	r.GEMM = gemmInfo{L1dBytes: caches.L1d, L2Bytes: caches.L2, L3Bytes: caches.L3, Source: caches.Source, Kernels: blocks}
	r.Environment = collectEnv(os.Environ(), os.LookupEnv)
	for _, t := range device.Types() {
		be, err := device.Lookup(t)
		if err != nil {
			continue
		}
		for i := 0; i < be.NumDevices(); i++ {
			p := be.Properties(i)
			s := be.MemStats(i)
			name := device.Device{Type: t, Index: i}.String()
			if p.Features == nil {
				p.Features = []string{}
			}
			r.Devices = append(r.Devices, deviceInfo{
				Name: name, Description: p.Name, MemoryBytes: p.MemoryBytes, DefaultPrecision: p.DefaultPrecision,
				Async: p.Async, Features: p.Features, AllocatedBytes: s.Allocated, ReservedBytes: s.Reserved, PeakBytes: s.PeakAllocated,
			})
		}
	}
	if infoPlugins != nil {
		r.Plugins, _ = infoPlugins()
	}
	return r
}

func writeInfo(w io.Writer, r infoReport) {
	fmt.Fprintf(w, "gotpu %s (%s, %s/%s)\n", r.Version, r.GoVersion, r.OS, r.Arch)
	fmt.Fprintf(w, "CPU: %d logical cores, GOMAXPROCS %d, features: %v, kernels: %s\n", r.NumCPU, r.GOMAXPROCS, r.CPUFeatures, r.CPULevel)
	g := r.GEMM
	fmt.Fprintf(w, "CPU GEMM blocking (caches L1d %d KiB, L2 %d KiB, L3 %d KiB from %s):\n", g.L1dBytes>>10, g.L2Bytes>>10, g.L3Bytes>>10, g.Source)
	for _, k := range g.Kernels {
		active := ""
		if k.Active {
			active = " (active)"
		}
		fmt.Fprintf(w, "  %-6s %s %2dx%-2d kc %4d mc %4d nc %5d%s\n", k.Level, k.DType, k.MR, k.NR, k.KC, k.MC, k.NC, active)
	}
	fmt.Fprintf(w, "mode: %s\n", r.Mode)
	fmt.Fprintln(w, "devices:")
	for _, d := range r.Devices {
		mem := "-"
		if d.MemoryBytes > 0 {
			mem = fmt.Sprintf("%.1f GiB", float64(d.MemoryBytes)/(1<<30))
		}
		fmt.Fprintf(w, "  %-10s %-28s memory %-10s precision %-8s async %v\n", d.Name, d.Description, mem, d.DefaultPrecision, d.Async)
	}
	if infoPlugins != nil {
		_, lines := infoPlugins()
		fmt.Fprintln(w, "pjrt plugins:")
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintln(w, "environment:")
	width := 0
	for _, e := range r.Environment {
		width = max(width, len(e.Name))
	}
	for _, e := range r.Environment {
		v := "(unset)"
		switch {
		case e.unread:
			v = e.Value + "  (not read by gotpu)"
		case e.Set:
			v = e.Value
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, e.Name, v)
	}
}

func init() {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Print the version, devices, CPU features, precision defaults and mode",
		Long: `Print the gotpu version, the registered devices with memory and default
matmul precision, the CPU features detected, and the execution mode taken from
the environment.

With --json, one object with the stable keys: version, go_version, os, arch,
num_cpu, gomaxprocs, cpu_features, cpu_kernel_level, cpu_gemm_blocking {l1d_bytes,
l2_bytes, l3_bytes, source, kernels [{level, dtype, mr, nr, kc, mc, nc, active}]},
mode, environment [{name, value, set}] (every variable this binary reads, set or
not, then any other GOTPU_ variable set),
devices [{name, description, memory_bytes, default_precision, async, features,
allocated_bytes, reserved_bytes, peak_allocated_bytes}], and in builds with the pjrt tag
pjrt_plugins [{name, loaded, path, platform, platform_version, api_version, devices, error}].`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := collectInfo()
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			writeInfo(cmd.OutOrStdout(), r)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	rootCmd.AddCommand(cmd)
}
