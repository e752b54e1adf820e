package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/hf/tokenizer"
)

// tokenizeOutput is one line of `gotpu tokenize --json`.
type tokenizeOutput struct {
	IDs     []int    `json:"ids"`
	Tokens  []string `json:"tokens"`
	Offsets [][2]int `json:"offsets"`
}

func newTokenizeCmd() *cobra.Command {
	var (
		path      string
		asJSON    bool
		noSpecial bool
	)
	cmd := &cobra.Command{
		Use:   "tokenize --tokenizer PATH [--json] [--no-special] (TEXT | -)",
		Short: "Encode text with a Hugging Face tokenizer.json",
		Long: `Encode TEXT, or each line of standard input when the argument is "-",
with the tokenizer.json given by --tokenizer, and print the token ids and
token strings.

Special tokens (BOS, [CLS], ...) are added as the tokenizer's post-processor
says unless --no-special is given. Truncation and padding configured in the
file apply.

With --json, one JSON object is printed per input line, with these keys:
  ids      array of token ids (integers)
  tokens   array of token strings
  offsets  array of [start, end) byte offsets into the input line; tokens
           added by post-processing or padding have [0, 0]
Without --json, each input prints two lines: "ids: ..." and "tokens: ..."
(tokens quoted as Go strings).

A malformed or unsupported tokenizer.json makes the command exit non-zero
with a one-line error.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("expected one argument, TEXT or - for standard input, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" {
				return errors.New("tokenize: --tokenizer PATH is required")
			}
			tk, err := tokenizer.FromFile(path)
			if err != nil {
				return fmt.Errorf("tokenize: %w", err)
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			emit := func(text string) error {
				e, err := tk.TryEncode(text, !noSpecial)
				if err != nil {
					return fmt.Errorf("tokenize: %w", err)
				}
				if asJSON {
					o := tokenizeOutput{IDs: e.IDs, Tokens: e.Tokens, Offsets: e.Offsets}
					if o.IDs == nil {
						o.IDs, o.Tokens, o.Offsets = []int{}, []string{}, [][2]int{}
					}
					enc := json.NewEncoder(out)
					enc.SetEscapeHTML(false)
					if err := enc.Encode(o); err != nil {
						return fmt.Errorf("tokenize: %w", err)
					}
					return nil
				}
				fmt.Fprintf(out, "ids: %v\n", e.IDs)
				quoted := make([]string, len(e.Tokens))
				for i, t := range e.Tokens {
					quoted[i] = fmt.Sprintf("%q", t)
				}
				fmt.Fprintf(out, "tokens: [%s]\n", strings.Join(quoted, " "))
				return nil
			}
			if args[0] != "-" {
				return emit(args[0])
			}
			r := bufio.NewReader(cmd.InOrStdin())
			for {
				line, err := r.ReadString('\n')
				if len(line) > 0 || err == nil {
					line = strings.TrimSuffix(line, "\n")
					line = strings.TrimSuffix(line, "\r")
					if e := emit(line); e != nil {
						return e
					}
				}
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return fmt.Errorf("tokenize: read standard input: %w", err)
				}
			}
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "path to tokenizer.json")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per input line")
	cmd.Flags().BoolVar(&noSpecial, "no-special", false, "do not add special tokens")
	return cmd
}

func init() {
	rootCmd.AddCommand(newTokenizeCmd())
}
