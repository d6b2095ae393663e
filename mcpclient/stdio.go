package mcpclient

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"syscall"
	"time"
)

// stopGrace is how long a child has to exit after its input closes, and
// then after SIGTERM, before it is killed.
const stopGrace = 2 * time.Second

// maxLogLine bounds one line of a child's standard error in the log;
// longer lines are logged in pieces.
const maxLogLine = 16 << 10

// process is a running stdio server.
type process struct {
	cmd    *exec.Cmd
	stdin  *input  // the write end of the child's standard input
	stdout *output // the read end of the child's standard output
	exited chan struct{}
	err    error // what Wait returned; set before exited closes
}

// quit says whether the process ended its side of the pipes before its
// input was closed: it exited on its own, not because the session ended.
func (p *process) quit() bool { return p.stdin.quit.Load() }

// input is the write end of a child's standard input. It notes when it is
// closed, and when the child ended its side of the pipes (a write to its
// input or a read of its output failed) while it was open.
type input struct {
	*os.File
	closed atomic.Bool
	quit   atomic.Bool
}

// Write writes to the child's input.
func (in *input) Write(b []byte) (int, error) {
	n, err := in.File.Write(b)
	in.failed(err)
	return n, err
}

// Close closes the pipe: the child reads the end of its input.
func (in *input) Close() error {
	in.closed.Store(true)
	return in.File.Close()
}

// failed notes that the child ended its side when err is a failure and
// the input is open.
func (in *input) failed(err error) {
	if err != nil && !in.closed.Load() {
		in.quit.Store(true)
	}
}

// output is the read end of a child's standard output.
type output struct {
	*os.File
	in *input
}

// Read reads the child's output.
func (out *output) Read(b []byte) (int, error) {
	n, err := out.File.Read(b)
	out.in.failed(err)
	return n, err
}

// startProcess starts the command of c in a process group of its own,
// with the pool's environment and c's env added to it. Its standard error
// goes to log, line by line.
func startProcess(c *config, log *slog.Logger) (*process, error) {
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		cmd.Env = append(cmd.Env, k+"="+c.Env[k])
	}
	ownGroup(cmd)

	// The pipes are the process's own, not exec's: Wait then neither
	// closes them under the reader nor waits for them to drain.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	closeAll(inR, outW, errW) // the child has its copies
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, fmt.Errorf("start %s: %v", c.Command, unwrapExec(err))
	}
	in := &input{File: inW}
	p := &process{cmd: cmd, stdin: in, stdout: &output{File: outR, in: in}, exited: make(chan struct{})}
	go logLines(errR, log)
	go func() {
		p.err = cmd.Wait()
		// What the child started goes with it, and the reader of its
		// output learns at once that nothing more will come.
		signalGroup(cmd.Process.Pid, syscall.SIGKILL)
		_ = p.stdout.Close()
		close(p.exited)
	}()
	return p, nil
}

// unwrapExec drops the "fork/exec path: " prefix that repeats the command.
func unwrapExec(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "fork/exec" {
		return pe.Err
	}
	return err
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// stop ends the process as MCP asks of a client: its input is closed
// (the session's Close did that already), then after a grace period its
// group gets SIGTERM, then SIGKILL. It returns once the process has been
// waited for.
func (p *process) stop() {
	_ = p.stdin.Close()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		select {
		case <-p.exited:
			return
		case <-time.After(stopGrace):
		}
		signalGroup(p.cmd.Process.Pid, sig)
	}
	<-p.exited
}

// exitErr says how the process ended: "exit status 1", "signal: killed".
func (p *process) exitErr() string {
	if p.err == nil {
		return "exit status 0"
	}
	return p.err.Error()
}

// logLines logs each line r yields, until it ends.
func logLines(r *os.File, log *slog.Logger) {
	defer r.Close()
	br := bufio.NewReaderSize(r, maxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		if text := string(bytes.TrimRight(line, "\r\n")); text != "" {
			log.Info("mcp server stderr", "line", text)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				log.Debug("mcp server stderr unreadable", "err", err)
			}
			return
		}
	}
}
