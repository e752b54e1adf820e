// Command gotpu is the command-line front end of the gotpu runtime: device
// information, the op table, tokenizers, model and GGUF inspection, text
// generation and chat, logits, model verification, sentence embeddings,
// training and benchmarks.
//
// Each subcommand lives in its own file and registers itself with the root
// command from an init function, so commands can be added without editing this file.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// rootCmd is the top-level command; subcommands attach to it in their init functions.
var rootCmd = &cobra.Command{
	Use:           "gotpu",
	Short:         "gotpu: a Go-native tensor and deep-learning runtime",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gotpu:", err)
		os.Exit(1)
	}
}
