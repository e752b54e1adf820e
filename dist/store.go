package dist

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"
)

// Store is the rendezvous key-value store (torch.distributed's TCPStore):
// every rank reaches it to find the others. Blocking calls wait until the
// key exists, the timeout passes or ctx is done.
type Store interface {
	// Set stores value under key, waking waiters.
	Set(ctx context.Context, key string, value []byte) error
	// Get returns key's value, waiting for it up to timeout.
	Get(ctx context.Context, key string, timeout time.Duration) ([]byte, error)
	// Wait waits until every key exists; a timeout error names the missing ones.
	Wait(ctx context.Context, keys []string, timeout time.Duration) error
	// Add adds delta to the integer stored under key (0 when absent) and
	// returns the new value.
	Add(ctx context.Context, key string, delta int64) (int64, error)
	// CompareSet sets key to desired when its value equals expected (an
	// absent key matches an empty expected) and returns the value after the
	// call.
	CompareSet(ctx context.Context, key string, expected, desired []byte) ([]byte, error)
	// Close releases the connection.
	Close() error
}

// ErrStoreTimeout is wrapped by store errors of keys that did not appear in time.
var ErrStoreTimeout = errors.New("store: timed out")

type storeReq struct {
	Op       string   `json:"op"`
	Key      string   `json:"key,omitempty"`
	Keys     []string `json:"keys,omitempty"`
	Value    []byte   `json:"value,omitempty"`
	Expected []byte   `json:"expected,omitempty"`
	Delta    int64    `json:"delta,omitempty"`
	TimeoutN int64    `json:"timeout_ns,omitempty"`
}

type storeResp struct {
	Value   []byte   `json:"value,omitempty"`
	Num     int64    `json:"num,omitempty"`
	Err     string   `json:"err,omitempty"`
	Timeout bool     `json:"timeout,omitempty"`
	Missing []string `json:"missing,omitempty"`
}

// StoreServer serves a Store over TCP (one JSON request and response per
// line). Rank 0 runs it inside Init unless the launcher does.
type StoreServer struct {
	ln      net.Listener
	mu      sync.Mutex
	data    map[string][]byte
	changed chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
	conns   map[net.Conn]bool
}

// ListenStore starts a store server on addr ("host:port"; port 0 picks one).
func ListenStore(ctx context.Context, addr string) (*StoreServer, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dist: store: listen on %s: %w", addr, err)
	}
	s := &StoreServer{ln: ln, data: map[string][]byte{}, changed: make(chan struct{}), done: make(chan struct{}), conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *StoreServer) Addr() string { return s.ln.Addr().String() }

// Close stops the server and closes its connections.
func (s *StoreServer) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	close(s.done)
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *StoreServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *StoreServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReader(c)
	enc := json.NewEncoder(c)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var q storeReq
		var resp storeResp
		if err := json.Unmarshal(line, &q); err != nil {
			resp.Err = "bad request: " + err.Error()
		} else {
			resp = s.handle(q)
		}
		if err := enc.Encode(&resp); err != nil {
			return
		}
	}
}

// notify wakes every waiter; s.mu is held.
func (s *StoreServer) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *StoreServer) handle(q storeReq) storeResp {
	switch q.Op {
	case "set":
		s.mu.Lock()
		s.data[q.Key] = q.Value
		s.notify()
		s.mu.Unlock()
		return storeResp{}
	case "add":
		s.mu.Lock()
		defer s.mu.Unlock()
		var n int64
		if v, ok := s.data[q.Key]; ok {
			if _, err := fmt.Sscan(string(v), &n); err != nil {
				return storeResp{Err: fmt.Sprintf("add: key %q holds %q, not an integer", q.Key, v)}
			}
		}
		n += q.Delta
		s.data[q.Key] = []byte(fmt.Sprint(n))
		s.notify()
		return storeResp{Num: n}
	case "cas":
		s.mu.Lock()
		defer s.mu.Unlock()
		v, ok := s.data[q.Key]
		if (!ok && len(q.Expected) == 0) || (ok && bytes.Equal(v, q.Expected)) {
			s.data[q.Key] = q.Desired()
			s.notify()
			return storeResp{Value: q.Value}
		}
		return storeResp{Value: v}
	case "get", "wait":
		keys := q.Keys
		if q.Op == "get" {
			keys = []string{q.Key}
		}
		deadline := time.Now().Add(time.Duration(q.TimeoutN))
		for {
			s.mu.Lock()
			var missing []string
			for _, k := range keys {
				if _, ok := s.data[k]; !ok {
					missing = append(missing, k)
				}
			}
			if len(missing) == 0 {
				var v []byte
				if q.Op == "get" {
					v = s.data[q.Key]
				}
				s.mu.Unlock()
				return storeResp{Value: v}
			}
			ch := s.changed
			s.mu.Unlock()
			left := time.Until(deadline)
			if left <= 0 {
				return storeResp{Timeout: true, Missing: missing}
			}
			t := time.NewTimer(left)
			select {
			case <-ch:
			case <-t.C:
			case <-s.done:
				t.Stop()
				return storeResp{Err: "store server closed"}
			}
			t.Stop()
		}
	}
	return storeResp{Err: fmt.Sprintf("unknown op %q", q.Op)}
}

// Desired is the value a compare-set writes (sent in Value).
func (q storeReq) Desired() []byte { return q.Value }

// TCPStore is a Store client. It is safe for concurrent use (calls are
// serialized on one connection).
type TCPStore struct {
	addr string
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
}

// DialStore connects to a store server at addr, retrying until it answers,
// timeout passes or ctx is done (ranks may start before the server).
func DialStore(ctx context.Context, addr string, timeout time.Duration) (*TCPStore, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		var d net.Dialer
		dctx, cancel := context.WithDeadline(ctx, deadline)
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			return &TCPStore{addr: addr, conn: c, r: bufio.NewReader(c)}, nil
		}
		last = err
		if ctx.Err() != nil {
			return nil, fmt.Errorf("dist: store at %s: %w", addr, ctx.Err())
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("dist: store at %s did not answer within %v (is rank 0 or the launcher running and serving it?): %w", addr, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *TCPStore) call(ctx context.Context, q storeReq, wait time.Duration) (storeResp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
		if err != nil {
			return storeResp{}, fmt.Errorf("dist: store %s %q: reconnect to %s: %w", q.Op, q.Key, c.addr, err)
		}
		c.conn, c.r = conn, bufio.NewReader(conn)
	}
	deadline := time.Now().Add(wait + 30*time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn := c.conn
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fail := func(err error) (storeResp, error) {
		c.conn.Close()
		c.conn = nil // the stream may be out of step: reconnect next time
		if ctx.Err() != nil {
			err = ctx.Err()
		} else if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			err = context.DeadlineExceeded // the connection's deadline fired first
		}
		return storeResp{}, fmt.Errorf("dist: store %s %q at %s: %w", q.Op, q.Key+strings.Join(q.Keys, ","), c.addr, err)
	}
	b, _ := json.Marshal(q)
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return fail(err)
	}
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return fail(err)
	}
	var resp storeResp
	if err := json.Unmarshal(line, &resp); err != nil {
		return fail(err)
	}
	if resp.Err != "" {
		return resp, fmt.Errorf("dist: store %s %q: %s", q.Op, q.Key, resp.Err)
	}
	return resp, nil
}

// Set implements Store.
func (c *TCPStore) Set(ctx context.Context, key string, value []byte) error {
	_, err := c.call(ctx, storeReq{Op: "set", Key: key, Value: value}, 0)
	return err
}

// Get implements Store.
func (c *TCPStore) Get(ctx context.Context, key string, timeout time.Duration) ([]byte, error) {
	r, err := c.call(ctx, storeReq{Op: "get", Key: key, TimeoutN: int64(timeout)}, timeout)
	if err != nil {
		return nil, err
	}
	if r.Timeout {
		return nil, fmt.Errorf("dist: store get %q: key not set within %v: %w", key, timeout, ErrStoreTimeout)
	}
	return r.Value, nil
}

// Wait implements Store.
func (c *TCPStore) Wait(ctx context.Context, keys []string, timeout time.Duration) error {
	r, err := c.call(ctx, storeReq{Op: "wait", Keys: keys, TimeoutN: int64(timeout)}, timeout)
	if err != nil {
		return err
	}
	if r.Timeout {
		sort.Strings(r.Missing)
		return fmt.Errorf("dist: store wait: keys %s not set within %v: %w", strings.Join(r.Missing, ", "), timeout, ErrStoreTimeout)
	}
	return nil
}

// Add implements Store.
func (c *TCPStore) Add(ctx context.Context, key string, delta int64) (int64, error) {
	r, err := c.call(ctx, storeReq{Op: "add", Key: key, Delta: delta}, 0)
	return r.Num, err
}

// CompareSet implements Store.
func (c *TCPStore) CompareSet(ctx context.Context, key string, expected, desired []byte) ([]byte, error) {
	r, err := c.call(ctx, storeReq{Op: "cas", Key: key, Expected: expected, Value: desired}, 0)
	return r.Value, err
}

// Close implements Store.
func (c *TCPStore) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}
