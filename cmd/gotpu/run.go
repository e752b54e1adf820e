package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/dist"
)

// launchConfig is a `gotpu run` job.
type launchConfig struct {
	NProcPerNode int
	NNodes       int
	NodeRank     int
	MasterAddr   string
	MasterPort   int // 0: a free port (one node only)
	StorePort    int // 0: MasterPort+1 with several nodes, a free port on one
	MaxRestarts  int
	Grace        time.Duration // between SIGTERM and SIGKILL at teardown
	NoPrefix     bool
	// ThreadsPerRank, if positive, is each rank's GOMAXPROCS.
	ThreadsPerRank int
	Program        []string
	ExtraEnv       []string
}

// rankExit is one rank's end in the last attempt.
type rankExit struct {
	Rank     int    `json:"rank"`
	ExitCode int    `json:"exit_code"`        // -1 when killed by a signal
	Signal   string `json:"signal,omitempty"` // the signal that ended it
}

// runReport is the --json output of `gotpu run` (one line after the
// ranks' output). Keys are stable.
type runReport struct {
	NProcPerNode int        `json:"nproc_per_node"`
	NNodes       int        `json:"nnodes"`
	NodeRank     int        `json:"node_rank"`
	WorldSize    int        `json:"world_size"`
	MasterAddr   string     `json:"master_addr"`
	MasterPort   int        `json:"master_port"`
	StoreAddr    string     `json:"store_addr"`       // the rendezvous store the launcher serves ("" on other nodes)
	Restarts     int        `json:"restarts"`         // restarts done
	ExitCode     int        `json:"exit_code"`        // the job's: 0, or the first failed rank's
	FailedRank   int        `json:"failed_rank"`      // the first rank seen to exit with a failure in the last attempt, -1 if none (a peer that reacted to the death within milliseconds can be seen first)
	Signal       string     `json:"signal,omitempty"` // the signal forwarded to the job, if any
	Ranks        []rankExit `json:"ranks"`            // this node's ranks in the last attempt
}

// freePort returns a TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// rankEnv is the environment of global rank r (torchrun's variables plus
// gotpu's store address and run id).
func rankEnv(c launchConfig, local, restart int, runID, storeAddr string) []string {
	world := c.NNodes * c.NProcPerNode
	rank := c.NodeRank*c.NProcPerNode + local
	env := []string{
		"RANK=" + strconv.Itoa(rank),
		"WORLD_SIZE=" + strconv.Itoa(world),
		"LOCAL_RANK=" + strconv.Itoa(local),
		"LOCAL_WORLD_SIZE=" + strconv.Itoa(c.NProcPerNode),
		"GROUP_RANK=" + strconv.Itoa(c.NodeRank),
		"ROLE_RANK=" + strconv.Itoa(rank),
		"ROLE_WORLD_SIZE=" + strconv.Itoa(world),
		"MASTER_ADDR=" + c.MasterAddr,
		"MASTER_PORT=" + strconv.Itoa(c.MasterPort),
		"TORCHELASTIC_RESTART_COUNT=" + strconv.Itoa(restart),
		"TORCHELASTIC_MAX_RESTARTS=" + strconv.Itoa(c.MaxRestarts),
		"TORCHELASTIC_RUN_ID=" + runID,
		fmt.Sprintf("GOTPU_RUN_ID=%s-%d", runID, restart),
	}
	if storeAddr != "" {
		env = append(env, "GOTPU_STORE_ADDR="+storeAddr)
	}
	if c.ThreadsPerRank > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(c.ThreadsPerRank))
	}
	return env
}

// threadsPerRank is the GOMAXPROCS each rank gets when the user set none
// (torchrun sets OMP_NUM_THREADS=1 for the same reason): the host's CPUs
// shared by the ranks, at least 1, so that ranks do not oversubscribe the
// cores. 0 means leave GOMAXPROCS alone.
func threadsPerRank(getenv func(string) string, ncpu, nproc int) int {
	if getenv("GOMAXPROCS") != "" || nproc <= 1 {
		return 0
	}
	return max(1, ncpu/nproc)
}

// prefixLines copies r to w line by line, each line prefixed.
func prefixLines(w io.Writer, mu *sync.Mutex, prefix string, r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			mu.Lock()
			io.WriteString(w, prefix)
			w.Write(line)
			mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

type rankProc struct {
	local  int
	cmd    *exec.Cmd
	done   chan struct{}
	exit   rankExit
	exitAt time.Time // when cmd.Wait returned
	pipes  sync.WaitGroup
}

// launch runs the job until it succeeds, fails with no restarts left, or
// a signal arrives on sigs (forwarded to every rank, then no restart).
func launch(ctx context.Context, c launchConfig, stdout, stderr io.Writer, sigs <-chan os.Signal) (runReport, error) {
	rep := runReport{NProcPerNode: c.NProcPerNode, NNodes: c.NNodes, NodeRank: c.NodeRank, WorldSize: c.NNodes * c.NProcPerNode,
		MasterAddr: c.MasterAddr, FailedRank: -1}
	if c.NProcPerNode < 1 || c.NNodes < 1 || c.NodeRank < 0 || c.NodeRank >= c.NNodes {
		return rep, fmt.Errorf("run: need --nproc-per-node ≥ 1, --nnodes ≥ 1 and 0 ≤ --node-rank < --nnodes (got %d, %d, %d)", c.NProcPerNode, c.NNodes, c.NodeRank)
	}
	if len(c.Program) == 0 {
		return rep, errors.New("run: no program: gotpu run [flags] -- PROGRAM ARGS")
	}
	if c.Grace <= 0 {
		c.Grace = 5 * time.Second
	}
	var err error
	if c.MasterPort == 0 {
		if c.NNodes > 1 {
			c.MasterPort = dist.DefaultMasterPort
		} else if c.MasterPort, err = freePort(); err != nil {
			return rep, fmt.Errorf("run: %w", err)
		}
	}
	rep.MasterPort = c.MasterPort
	var storeAddr string
	if c.StorePort == 0 {
		if c.NNodes > 1 {
			c.StorePort = c.MasterPort + 1
		} else if c.StorePort, err = freePort(); err != nil {
			return rep, fmt.Errorf("run: %w", err)
		}
	}
	storeAddr = net.JoinHostPort(c.MasterAddr, strconv.Itoa(c.StorePort))
	if c.NodeRank == 0 {
		listen := storeAddr
		if c.NNodes > 1 {
			listen = net.JoinHostPort("", strconv.Itoa(c.StorePort))
		}
		srv, err := dist.ListenStore(ctx, listen)
		if err != nil {
			return rep, fmt.Errorf("run: serve the rendezvous store: %w", err)
		}
		defer srv.Close()
		rep.StoreAddr = storeAddr
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	runID := hex.EncodeToString(rnd[:])
	var outMu sync.Mutex
	for attempt := 0; ; attempt++ {
		rep.Restarts = attempt
		code, failed, sig, exits, err := runAttempt(ctx, c, attempt, runID, storeAddr, stdout, stderr, &outMu, sigs)
		rep.Ranks, rep.ExitCode, rep.FailedRank = exits, code, failed
		if sig != nil {
			rep.Signal = sig.String()
		}
		if err != nil {
			return rep, err
		}
		if code == 0 || sig != nil || attempt >= c.MaxRestarts || ctx.Err() != nil {
			return rep, nil
		}
		outMu.Lock()
		fmt.Fprintf(stderr, "gotpu run: rank %d failed (exit %d); restarting the job (%d of %d)\n", failed, code, attempt+1, c.MaxRestarts)
		outMu.Unlock()
	}
}

func runAttempt(ctx context.Context, c launchConfig, attempt int, runID, storeAddr string, stdout, stderr io.Writer, outMu *sync.Mutex, sigs <-chan os.Signal) (code, failed int, sig os.Signal, exits []rankExit, err error) {
	procs := make([]*rankProc, c.NProcPerNode)
	ended := make(chan *rankProc, len(procs))
	for local := range procs {
		rank := c.NodeRank*c.NProcPerNode + local
		cmd := exec.Command(c.Program[0], c.Program[1:]...)
		cmd.Env = append(append(os.Environ(), c.ExtraEnv...), rankEnv(c, local, attempt, runID, storeAddr)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		p := &rankProc{local: local, cmd: cmd, done: make(chan struct{}), exit: rankExit{Rank: rank}}
		prefix := fmt.Sprintf("[%d] ", rank)
		if c.NoPrefix {
			prefix = ""
		}
		// The ranks write into pipes the launcher owns (not StdoutPipe), so
		// cmd.Wait returns the moment a rank exits and exitAt orders the
		// failures even while their last output is still being read.
		so, sow, e1 := os.Pipe()
		se, sew, e2 := os.Pipe()
		if err := errors.Join(e1, e2); err != nil {
			closeAll(so, sow, se, sew)
			teardown(procs[:local], syscall.SIGKILL, 0)
			return 1, rank, nil, nil, fmt.Errorf("run: pipes of rank %d: %w", rank, err)
		}
		cmd.Stdout, cmd.Stderr = sow, sew
		err := cmd.Start()
		closeAll(sow, sew)
		if err != nil {
			closeAll(so, se)
			teardown(procs[:local], syscall.SIGKILL, 0)
			return 1, rank, nil, nil, fmt.Errorf("run: start rank %d (%s): %w", rank, c.Program[0], err)
		}
		p.pipes.Add(2)
		go func() { defer p.pipes.Done(); defer so.Close(); prefixLines(stdout, outMu, prefix, so) }()
		go func() { defer p.pipes.Done(); defer se.Close(); prefixLines(stderr, outMu, prefix, se) }()
		go func() {
			werr := cmd.Wait()
			p.exitAt = time.Now()
			p.exit.ExitCode = 0
			if werr != nil {
				p.exit.ExitCode = -1
				var ee *exec.ExitError
				if errors.As(werr, &ee) {
					p.exit.ExitCode = ee.ExitCode()
					if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
						p.exit.Signal = ws.Signal().String()
					}
				}
			}
			p.pipes.Wait()
			close(p.done)
			ended <- p
		}()
		procs[local] = p
	}
	failed = -1
	running := len(procs)
	tornDown := false
	for running > 0 {
		select {
		case p := <-ended:
			running--
			if (p.exit.ExitCode != 0 || p.exit.Signal != "") && failed < 0 && sig == nil {
				failed, code = p.exit.Rank, p.exit.ExitCode
				if code == 0 || code == -1 {
					code = 1
				}
				if !tornDown {
					tornDown = true
					outMu.Lock()
					fmt.Fprintf(stderr, "gotpu run: rank %d exited (code %d%s); stopping the other ranks\n", p.exit.Rank, p.exit.ExitCode, sigSuffix(p.exit.Signal))
					outMu.Unlock()
					go teardown(procs, syscall.SIGTERM, c.Grace)
				}
			}
		case s := <-sigs:
			if sig == nil {
				sig = s
				code = 128 + int(s.(syscall.Signal))
				go teardown(procs, s.(syscall.Signal), c.Grace)
			}
		case <-ctx.Done():
			if !tornDown {
				tornDown = true
				go teardown(procs, syscall.SIGTERM, c.Grace)
			}
		}
	}
	exits = make([]rankExit, len(procs))
	var first *rankProc
	for i, p := range procs {
		exits[i] = p.exit
		if failed >= 0 && (p.exit.ExitCode != 0 || p.exit.Signal != "") && (first == nil || p.exitAt.Before(first.exitAt)) {
			first = p
		}
	}
	if first != nil && first.exit.Rank != failed {
		// The rank noticed first was not the first to exit: a peer that
		// saw it die can be reaped before it. Report the root cause.
		failed, code = first.exit.Rank, first.exit.ExitCode
		if code == 0 || code == -1 {
			code = 1
		}
	}
	return code, failed, sig, exits, nil
}

// closeAll closes the files that are not nil.
func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

func sigSuffix(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

// teardown sends sig to the process group of every rank still running,
// then SIGKILL to those left after grace.
func teardown(procs []*rankProc, sig syscall.Signal, grace time.Duration) {
	for _, p := range procs {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		default:
			syscall.Kill(-p.cmd.Process.Pid, sig)
		}
	}
	deadline := time.After(grace)
	for _, p := range procs {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-deadline:
			for _, q := range procs {
				if q != nil {
					select {
					case <-q.done:
					default:
						syscall.Kill(-q.cmd.Process.Pid, syscall.SIGKILL)
					}
				}
			}
			return
		}
	}
}

func newRunCmd() *cobra.Command {
	var c launchConfig
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "run [flags] -- PROGRAM [ARGS...]",
		Short: "Launch a program as the ranks of a distributed job (torchrun's environment)",
		Long: `run starts --nproc-per-node copies of PROGRAM on this host with torchrun's
environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT, TORCHELASTIC_*) plus GOTPU_STORE_ADDR, the rendezvous store the
launcher serves on node 0 for package dist. Each output line is prefixed
with its rank. SIGINT and SIGTERM are forwarded to every rank. When a rank
fails the others are stopped (SIGTERM, then SIGKILL after --grace) and the
job restarts, up to --max-restarts times (TORCHELASTIC_RESTART_COUNT tells
the program which attempt it is, to resume from its last checkpoint).
gotpu exits with the first failed rank's exit code. Unless GOMAXPROCS is
set, each rank gets GOMAXPROCS = CPUs / --nproc-per-node (at least 1), as
torchrun sets OMP_NUM_THREADS, so that the ranks do not oversubscribe the
cores (on a 2-core host this made 2-rank DDP on MNIST 1.8x faster).

With --nnodes M, run it once per host with --node-rank 0..M-1 and the same
--master-addr; gotpu's built-in engine refuses a world across hosts (see
README), other programs may use it.

--json prints, after the ranks' output, one line with the keys
nproc_per_node, nnodes, node_rank, world_size, master_addr, master_port,
store_addr, restarts, exit_code, failed_rank, signal, ranks
([{rank, exit_code, signal}]).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c.Program = args
			c.ThreadsPerRank = threadsPerRank(os.Getenv, runtime.NumCPU(), c.NProcPerNode)
			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(sigs)
			rep, err := launch(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr(), sigs)
			if err != nil {
				return err
			}
			if asJSON {
				b, _ := json.Marshal(rep)
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
			}
			if rep.ExitCode != 0 {
				os.Exit(rep.ExitCode)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&c.NProcPerNode, "nproc-per-node", 1, "processes (ranks) on this host")
	f.IntVar(&c.NNodes, "nnodes", 1, "hosts in the job")
	f.IntVar(&c.NodeRank, "node-rank", 0, "this host's index, 0..nnodes-1")
	f.StringVar(&c.MasterAddr, "master-addr", "127.0.0.1", "address of node 0 (MASTER_ADDR)")
	f.IntVar(&c.MasterPort, "master-port", 0, "MASTER_PORT (0: a free port on one node, 29500 on several)")
	f.IntVar(&c.StorePort, "store-port", 0, "port of the rendezvous store node 0 serves (0: a free port on one node, master-port+1 on several)")
	f.IntVar(&c.MaxRestarts, "max-restarts", 0, "restart the whole job up to this many times when a rank fails")
	f.DurationVar(&c.Grace, "grace", 5*time.Second, "time the ranks get between SIGTERM and SIGKILL at teardown")
	f.BoolVar(&c.NoPrefix, "no-prefix", false, "do not prefix output lines with [rank]")
	f.BoolVar(&asJSON, "json", false, "print a JSON report line after the job (keys in --help)")
	f.SetInterspersed(false)
	return cmd
}

func init() {
	rootCmd.AddCommand(newRunCmd())
}
