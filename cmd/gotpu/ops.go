package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/op"
)

// opInfo is one element of `gotpu ops --json`. Keys are stable.
type opInfo struct {
	Name         string   `json:"name"`
	Kind         string   `json:"kind"` // primitive | view | composite
	Group        string   `json:"group"`
	Inputs       []string `json:"inputs"`
	Attrs        []string `json:"attrs"`
	DTypes       []string `json:"dtypes"`
	Device       string   `json:"device"`
	DirectKernel []string `json:"direct_kernel_dtypes"` // dtypes the device runs with its own kernel
	Runs         bool     `json:"runs"`                 // the op runs on the device (kernel, view or decomposition)
	Doc          string   `json:"doc"`
}

func opsReport(devName string) ([]opInfo, error) {
	dev, be, err := device.Get(devName)
	if err != nil {
		return nil, err
	}
	var out []opInfo
	for _, d := range op.All() {
		oi := opInfo{Name: d.Name, Kind: d.Kind.String(), Group: d.Group, Inputs: d.Inputs, Device: dev.String(), Doc: d.Doc,
			Attrs: []string{}, DTypes: []string{}, DirectKernel: []string{}}
		if oi.Inputs == nil {
			oi.Inputs = []string{}
		}
		for _, a := range d.Attrs {
			oi.Attrs = append(oi.Attrs, a.Name+":"+a.Type.String())
		}
		for _, dt := range d.DTypes.List() {
			oi.DTypes = append(oi.DTypes, dt.String())
			if d.Kind != op.View && be.Supports(d, dt) {
				oi.DirectKernel = append(oi.DirectKernel, dt.String())
			}
		}
		oi.Runs = d.Kind == op.View || len(oi.DirectKernel) > 0 || d.Kind == op.Composite
		out = append(out, oi)
	}
	return out, nil
}

func init() {
	var asJSON bool
	var devName string
	cmd := &cobra.Command{
		Use:   "ops",
		Short: "List every op in the op table and what a device runs natively",
		Long: `List every op of the op table: primitive, view or composite, its group,
inputs, attributes and dtypes, and which dtypes the device runs with a direct
kernel (a composite without one runs its decomposition; a primitive without
one is an error on that device).

With --json, an array of objects with the stable keys: name, kind, group,
inputs, attrs ("name:type"), dtypes, device, direct_kernel_dtypes, runs, doc.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := opsReport(devName)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			fmt.Fprintf(tw, "OP\tKIND\tGROUP\tDTYPES\tKERNEL ON %s\n", strings.ToUpper(devName))
			counts := map[string]int{}
			for _, o := range rep {
				counts[o.Kind]++
				k := "decomposition"
				switch {
				case o.Kind == "view":
					k = "view"
				case len(o.DirectKernel) == len(o.DTypes):
					k = "yes"
				case len(o.DirectKernel) > 0:
					k = strings.Join(o.DirectKernel, ",")
				case o.Kind == "primitive":
					k = "MISSING"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.Name, o.Kind, o.Group, strings.Join(o.DTypes, ","), k)
			}
			tw.Flush()
			fmt.Fprintf(cmd.OutOrStdout(), "%d ops: %d primitive, %d view, %d composite\n", len(rep), counts["primitive"], counts["view"], counts["composite"])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().StringVar(&devName, "device", "cpu", "device whose kernels to report")
	rootCmd.AddCommand(cmd)
}
