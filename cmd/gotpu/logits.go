package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// logitsOutput is `gotpu logits --json`.
type logitsOutput struct {
	IDs       []int       `json:"ids"`
	Positions []int       `json:"positions"`
	Logits    [][]float32 `json:"logits"`
}

func newLogitsCmd() *cobra.Command {
	var (
		mf     modelFlags
		ids    string
		prompt string
		all    bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "logits --model PATH (--ids 1,2,3 | --prompt TEXT) [--all-positions] [--json]",
		Short: "Print a causal language model's next-token logits",
		Long: `Run the model once over the token ids (--ids) or the tokenized --prompt (with
the tokenizer's special tokens, as transformers' tokenizer(text) adds them) and
print the logits: of the last position, or of every position with
--all-positions.

With --json one object is printed, with these stable keys:
  ids        the input token ids
  positions  the positions reported (0-based)
  logits     one array of vocabulary-size floats per reported position
Without --json, each reported position prints its five largest logits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (ids == "") == (prompt == "") {
				return errors.New("logits: give exactly one of --ids and --prompt")
			}
			m, restore, err := mf.load()
			if err != nil {
				return fmt.Errorf("logits: %w", err)
			}
			defer restore()
			if m.LM == nil {
				return fmt.Errorf("logits: %s is not a causal language model", mf.path)
			}
			var in []int
			if ids != "" {
				if in, err = parseIDs(ids); err != nil {
					return fmt.Errorf("logits: %w", err)
				}
			} else {
				if m.Tokenizer == nil {
					return fmt.Errorf("logits: %s has no tokenizer.json; use --ids", mf.path)
				}
				e, err := m.Tokenizer.TryEncode(prompt, true)
				if err != nil {
					return fmt.Errorf("logits: %w", err)
				}
				in = e.IDs
			}
			flat, t, err := m.LM.ForwardLogits([][]int{in}, 0)
			if err != nil {
				return fmt.Errorf("logits: %w", err)
			}
			v := len(flat) / t
			out := logitsOutput{IDs: in}
			first := t - 1
			if all {
				first = 0
			}
			for p := first; p < t; p++ {
				out.Positions = append(out.Positions, p)
				out.Logits = append(out.Logits, flat[p*v:(p+1)*v])
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				return enc.Encode(out)
			}
			for i, row := range out.Logits {
				fmt.Fprintf(w, "position %d: top %v\n", out.Positions[i], topN(row, 5))
			}
			return nil
		},
	}
	mf.register(cmd.Flags())
	cmd.Flags().StringVar(&ids, "ids", "", "comma-separated input token ids")
	cmd.Flags().StringVar(&prompt, "prompt", "", "input text (tokenized with the model's tokenizer)")
	cmd.Flags().BoolVar(&all, "all-positions", false, "report every position, not only the last")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// topN formats the n largest entries of row as id:value.
func topN(row []float32, n int) []string {
	idx := make([]int, 0, n)
	for i := range row {
		j := len(idx)
		if j < n {
			idx = append(idx, i)
		} else if row[i] <= row[idx[n-1]] {
			continue
		} else {
			j = n - 1
			idx[j] = i
		}
		for j > 0 && row[idx[j]] > row[idx[j-1]] {
			idx[j], idx[j-1] = idx[j-1], idx[j]
			j--
		}
	}
	out := make([]string, len(idx))
	for i, k := range idx {
		out[i] = fmt.Sprintf("%d:%.4f", k, row[k])
	}
	return out
}

func init() {
	rootCmd.AddCommand(newLogitsCmd())
}
