//go:build e2e

package e2e

import (
	"net"
	"sync"
	"testing"
	"time"
)

// blackholeProxy forwards TCP connections from a loopback port to target.
// BlackHole stops every byte both ways, on open connections and on new
// ones (which are accepted), while the connections stay open: what a
// partitioned network or a dead middlebox does. When the black-hole ends,
// bytes held meanwhile flow again, as TCP's retransmissions deliver them.
// Heal ends a black-hole now.
func (p *blackholeProxy) Heal() {
	p.mu.Lock()
	p.until = time.Now()
	p.mu.Unlock()
	p.heal()
}

// Reset resets every open connection, as a load balancer dropping its
// connections does; Refuse resets them and, for a while, every new one as
// soon as it is accepted. Close stops it and waits for every goroutine.
type blackholeProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	until time.Time
	// refuseUntil: connections accepted before it are reset at once.
	refuseUntil time.Time
	opened      chan struct{} // closed and replaced when a black-hole ends
	conns       map[net.Conn]struct{}
}

func newBlackholeProxy(t *testing.T, target string) *blackholeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blackholeProxy{ln: ln, target: target, opened: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the address clients connect to.
func (p *blackholeProxy) Addr() string { return p.ln.Addr().String() }

// BlackHole stops all traffic for d from now.
func (p *blackholeProxy) BlackHole(d time.Duration) {
	p.mu.Lock()
	p.until = time.Now().Add(d)
	p.mu.Unlock()
	time.AfterFunc(d, p.heal)
}

// Reset resets every open connection (an RST, not a clean close).
func (p *blackholeProxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		resetConn(c)
	}
}

// Refuse resets every open connection, and every new one for d.
func (p *blackholeProxy) Refuse(d time.Duration) {
	p.mu.Lock()
	p.refuseUntil = time.Now().Add(d)
	p.mu.Unlock()
	p.Reset()
}

// refusing says whether a connection accepted now is to be reset.
func (p *blackholeProxy) refusing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Before(p.refuseUntil)
}

// resetConn closes c so that its peer gets an RST.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// heal lets held bytes flow once the black-hole's time is over.
func (p *blackholeProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Now().Before(p.until) {
		return
	}
	close(p.opened)
	p.opened = make(chan struct{})
}

// gate blocks while a black-hole is on.
func (p *blackholeProxy) gate() {
	for {
		p.mu.Lock()
		on, wait := time.Now().Before(p.until), p.opened
		p.mu.Unlock()
		if !on {
			return
		}
		<-wait
	}
}

func (p *blackholeProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.refusing() {
			resetConn(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve forwards one connection both ways through the gate.
func (p *blackholeProxy) serve(c net.Conn) {
	defer p.wg.Done()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.track(c, up)
	defer p.untrack(c, up)
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.copy(up, c) }()
	go func() { defer both.Done(); p.copy(c, up) }()
	both.Wait()
}

// copy moves bytes from src to dst, holding each chunk while black-holed;
// when either side ends, both connections are closed.
func (p *blackholeProxy) copy(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *blackholeProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

func (p *blackholeProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

// Close stops accepting, ends every black-hole and connection, and waits
// for every goroutine.
func (p *blackholeProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.until = time.Time{}
	close(p.opened)
	p.opened = make(chan struct{})
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
