package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchListHasEverySubcommand checks that `gotpu bench list` (text and
// JSON) names every bench subcommand, the cases with their own flags
// included, so the list cannot drift from what `gotpu bench` runs.
func TestBenchListHasEverySubcommand(t *testing.T) {
	var want []string
	for _, c := range benchCmd.Commands() {
		if n := c.Name(); n != "list" && n != "summary" && c.IsAvailableCommand() {
			want = append(want, n)
		}
	}
	for _, must := range []string{"fuse", "model", "qgemv", "gemm"} {
		if !strings.Contains(" "+strings.Join(want, " ")+" ", " "+must+" ") {
			t.Fatalf("bench has no %s subcommand: %v", must, want)
		}
	}
	for _, tc := range []struct {
		args []string
		json bool
	}{
		{args: []string{"list"}},
		{args: []string{"list", "--json"}, json: true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runBench(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if tc.json {
				var infos []benchCaseInfo
				if err := json.Unmarshal([]byte(out), &infos); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				for _, i := range infos {
					got = append(got, i.Name)
				}
			} else {
				for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
					got = append(got, strings.Fields(l)[0])
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("list %v, want the subcommands %v", got, want)
			}
		})
	}
	if cmd, _, err := benchCmd.Find([]string{"list"}); err == nil {
		cmd.Flags().Set("json", "false")
	}
}
