package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// distEnvVars is the environment `gotpu dist env` prints: the variables
// gotpu run gives local rank `local` of this host.
func distEnvVars(nproc, nnodes, nodeRank, local int, addr string, port int) (map[string]string, error) {
	if nproc < 1 || nnodes < 1 || nodeRank < 0 || nodeRank >= nnodes || local < 0 || local >= nproc {
		return nil, fmt.Errorf("dist env: need --nproc-per-node ≥ 1, --nnodes ≥ 1, 0 ≤ --node-rank < --nnodes and 0 ≤ --local-rank < --nproc-per-node")
	}
	world := nproc * nnodes
	rank := nodeRank*nproc + local
	return map[string]string{
		"RANK":             strconv.Itoa(rank),
		"WORLD_SIZE":       strconv.Itoa(world),
		"LOCAL_RANK":       strconv.Itoa(local),
		"LOCAL_WORLD_SIZE": strconv.Itoa(nproc),
		"GROUP_RANK":       strconv.Itoa(nodeRank),
		"MASTER_ADDR":      addr,
		"MASTER_PORT":      strconv.Itoa(port),
	}, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || r == ':' || r == '/' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newDistCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "dist", Short: "Distributed jobs: the launcher environment"}
	var nproc, nnodes, nodeRank, local, port int
	var addr string
	var asJSON bool
	env := &cobra.Command{
		Use:   "env",
		Short: "Print the environment of one rank as export lines (eval \"$(gotpu dist env ...)\")",
		Long: `env prints the torchrun variables gotpu run would give local rank
--local-rank of node --node-rank, as "export NAME=value" lines for eval, so
that a program started by hand (or by another launcher) joins a job:
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
MASTER_PORT. With --json it prints one JSON object with those names as
keys (string values). Rank 0 then serves the rendezvous store itself at
MASTER_ADDR:MASTER_PORT.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			vars, err := distEnvVars(nproc, nnodes, nodeRank, local, addr, port)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				b, _ := json.Marshal(vars)
				fmt.Fprintln(out, string(b))
				return nil
			}
			keys := make([]string, 0, len(vars))
			for k := range vars {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(out, "export %s=%s\n", k, shellQuote(vars[k]))
			}
			return nil
		},
	}
	f := env.Flags()
	f.IntVar(&nproc, "nproc-per-node", 1, "processes (ranks) per host")
	f.IntVar(&nnodes, "nnodes", 1, "hosts in the job")
	f.IntVar(&nodeRank, "node-rank", 0, "this host's index")
	f.IntVar(&local, "local-rank", 0, "the rank on this host to print the variables of")
	f.StringVar(&addr, "master-addr", "127.0.0.1", "MASTER_ADDR")
	f.IntVar(&port, "master-port", 29500, "MASTER_PORT")
	f.BoolVar(&asJSON, "json", false, "print one JSON object instead of export lines")
	cmd.AddCommand(env)
	return cmd
}

func init() {
	rootCmd.AddCommand(newDistCmd())
}
