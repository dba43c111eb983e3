//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// replicaRecord is one line of an elasticreplica log (its type record).
type replicaRecord struct {
	T        int64    `json:"t"`
	Kind     string   `json:"kind"`
	Shard    string   `json:"shard"`
	Event    string   `json:"event"`
	UID      string   `json:"uid"`
	Name     string   `json:"name"`
	RV       string   `json:"rv"`
	Members  int      `json:"members"`
	Planned  int      `json:"planned"`
	Handling int      `json:"handling"`
	Formed   bool     `json:"formed"`
	Fenced   bool     `json:"fenced"`
	Error    string   `json:"error"`
	Keys     []string `json:"keys"`
	Lease    string   `json:"lease"`
	Settings string   `json:"settings"`
}

func (r replicaRecord) at() time.Time { return time.Unix(0, r.T) }

// buildReplica builds hack/e2e/elasticreplica into a temporary directory.
// The program lives outside e2e/ so that ./e2e/... stays one package,
// whose verbose output go test streams as the tests run.
func buildReplica(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "elasticreplica")
	start := time.Now()
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../hack/e2e/elasticreplica").CombinedOutput()
	if err != nil {
		t.Fatalf("building the replica: %v\n%s", err, out)
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))
	return bin
}

// fleet runs replica processes of one run and reads their logs.
type fleet struct {
	t    *testing.T
	bin  string
	dir  string
	args []string // every replica's flags but --identity, --log, --host
	host string

	procs []*replicaProc
}

// replicaProc is one replica process: its identity, its log as read so
// far, and how it ended.
type replicaProc struct {
	id string
	// owner names the replica for the movement figures: the identity of
	// an elastic replica, the ordinal (pod-i) of a static one, which a
	// restart keeps.
	owner   string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error // set before done closes

	// stopped is when the test signalled it to end (SIGTERM or SIGKILL);
	// killed says it was SIGKILL.
	stopped time.Time
	killed  bool

	// pauses are the spans it was stopped (SIGSTOP to SIGCONT).
	pauses []pauseSpan

	off     int64
	partial []byte
	recs    []replicaRecord
}

// pauseSpan is a span of time a process was stopped.
type pauseSpan struct{ from, to time.Time }

// keepLogsEnv, if set to a directory, keeps the replicas' logs there
// (one subdirectory per run) rather than in the test's temporary one.
const keepLogsEnv = "KREFLECTOR_ELASTIC_LOGS"

func newFleet(t *testing.T, name, bin, host string, args ...string) *fleet {
	dir := t.TempDir()
	if keep := os.Getenv(keepLogsEnv); keep != "" {
		dir = filepath.Join(keep, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("the %s replicas' logs are kept in %s", name, dir)
	}
	f := &fleet{t: t, bin: bin, dir: dir, args: args, host: host}
	t.Cleanup(func() {
		for _, p := range f.procs {
			if p.alive() {
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	})
	return f
}

// start runs a replica named id; host, if not "", replaces the fleet's.
func (f *fleet) start(id, host string, extra ...string) *replicaProc {
	f.t.Helper()
	if host == "" {
		host = f.host
	}
	p := &replicaProc{id: id, owner: id, logPath: filepath.Join(f.dir, id+".log"), done: make(chan struct{})}
	args := append(slices.Clone(f.args), "--identity", id, "--log", p.logPath, "--host", host)
	p.cmd = exec.Command(f.bin, append(args, extra...)...)
	stderr, err := os.Create(filepath.Join(f.dir, id+".stderr"))
	if err != nil {
		f.t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = stderr, stderr
	if err := p.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		stderr.Close()
		close(p.done)
	}()
	f.procs = append(f.procs, p)
	return p
}

func (p *replicaProc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// term sends SIGTERM to each of ps at once and waits for them to exit.
func (f *fleet) term(ps ...*replicaProc) {
	f.t.Helper()
	for _, p := range ps {
		p.stopped = time.Now()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range ps {
		select {
		case <-p.done:
		case <-time.After(minute):
			f.t.Fatalf("%s did not exit within a minute of SIGTERM", p.id)
		}
		if p.err != nil {
			f.t.Errorf("%s exited with %v: %s", p.id, p.err, f.stderr(p))
		}
	}
}

// kill SIGKILLs p and waits until it is gone.
func (f *fleet) kill(p *replicaProc) {
	p.stopped, p.killed = time.Now(), true
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (f *fleet) stderr(p *replicaProc) string {
	b, _ := os.ReadFile(filepath.Join(f.dir, p.id+".stderr"))
	return strings.TrimSpace(string(b))
}

// read appends the records written since the last read.
func (p *replicaProc) read() error {
	fh, err := os.Open(p.logPath)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer fh.Close()
	if _, err := fh.Seek(p.off, 0); err != nil {
		return err
	}
	r := bufio.NewReaderSize(fh, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		p.off += int64(len(line))
		if len(line) > 0 && line[len(line)-1] != '\n' {
			p.partial = append(p.partial, line...)
			break
		}
		if len(line) > 0 {
			line = append(p.partial, line...)
			p.partial = nil
			var rec replicaRecord
			if jerr := json.Unmarshal(bytes.TrimSpace(line), &rec); jerr != nil {
				return fmt.Errorf("%s: %q: %w", p.logPath, line, jerr)
			}
			p.recs = append(p.recs, rec)
		}
		if err != nil {
			break
		}
	}
	return nil
}

// lastStatus returns p's newest status record.
func (p *replicaProc) lastStatus() (replicaRecord, bool) {
	for i := len(p.recs) - 1; i >= 0; i-- {
		if p.recs[i].Kind == "status" {
			return p.recs[i], true
		}
	}
	return replicaRecord{}, false
}

// waitFormed waits until every one of ps, in a status written after
// since, says it is formed and (members > 0) sees members members. It
// returns when the last of them said so.
func (f *fleet) waitFormed(ps []*replicaProc, members int, since time.Time, within time.Duration) time.Time {
	f.t.Helper()
	at, why, ok := f.tryFormed(ps, members, since, within)
	if !ok {
		f.t.Fatalf("not formed with %d members within %v: %s", members, within, why)
	}
	return at
}

// tryFormed is waitFormed, saying why not rather than failing the test
// when within passes (a process that exits still fails it).
func (f *fleet) tryFormed(ps []*replicaProc, members int, since time.Time, within time.Duration) (time.Time, string, bool) {
	f.t.Helper()
	deadline := time.Now().Add(within)
	for {
		last, why := f.formedAt(ps, members, since)
		if len(why) == 0 {
			return last, "", true
		}
		if time.Now().After(deadline) {
			return time.Time{}, strings.Join(why, "; "), false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// formedAt reads the logs of ps and returns when the last of them said it
// was formed with members members after since, or why some did not.
func (f *fleet) formedAt(ps []*replicaProc, members int, since time.Time) (time.Time, []string) {
	var last time.Time
	var why []string
	for _, p := range ps {
		if err := p.read(); err != nil {
			f.t.Fatal(err)
		}
		s, ok := p.lastStatus()
		switch {
		case !p.alive():
			f.t.Fatalf("%s exited: %v: %s", p.id, p.err, f.stderr(p))
		case !ok || s.at().Before(since):
			why = append(why, p.id+": no status yet")
		case !s.Formed || (members > 0 && s.Members != members):
			why = append(why, fmt.Sprintf("%s: members %d planned %d handling %d formed %v fenced %v %s", p.id, s.Members, s.Planned, s.Handling, s.Formed, s.Fenced, s.Error))
		case s.at().After(last):
			last = s.at()
		}
	}
	return last, why
}

// caches asks each of ps for its cache (SIGUSR1) and returns what each
// wrote, name to resourceVersion.
func (f *fleet) caches(ps []*replicaProc) []map[string]string {
	f.t.Helper()
	asked := time.Now()
	for _, p := range ps {
		_ = p.cmd.Process.Signal(syscall.SIGUSR1)
	}
	out := make([]map[string]string, len(ps))
	deadline := time.Now().Add(30 * time.Second)
	for i, p := range ps {
		for out[i] == nil {
			if err := p.read(); err != nil {
				f.t.Fatal(err)
			}
			for j := len(p.recs) - 1; j >= 0 && out[i] == nil; j-- {
				if r := p.recs[j]; r.Kind == "cache" && !r.at().Before(asked) {
					out[i] = map[string]string{}
					for _, k := range r.Keys {
						if name, rv, ok := strings.Cut(k, " "); ok {
							out[i][name] = rv
						}
					}
				}
			}
			if out[i] == nil {
				if time.Now().After(deadline) {
					f.t.Fatalf("%s wrote no cache within 30 s of SIGUSR1", p.id)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	return out
}
