package device

import (
	"fmt"
	"sync"
)

// Stream runs functions in submission order on one goroutine, as a device
// stream runs kernels. The first error is kept and reported by Sync, with the
// name and site of the work that failed; later work is skipped until then.
// Backends with asynchronous devices use it; it is safe for concurrent use.
type Stream struct {
	once  sync.Once
	ch    chan streamItem
	mu    sync.Mutex
	cond  *sync.Cond
	queue int // enqueued and not finished
	err   error
}

type streamItem struct {
	name, site string
	fn         func() error
}

func (s *Stream) init() {
	s.once.Do(func() {
		s.ch = make(chan streamItem, 1024)
		s.cond = sync.NewCond(&s.mu)
		go s.loop()
	})
}

func (s *Stream) loop() {
	for it := range s.ch {
		s.mu.Lock()
		failed := s.err != nil
		s.mu.Unlock()
		var err error
		if !failed {
			err = safeRun(it.fn)
		}
		s.mu.Lock()
		if err != nil && s.err == nil {
			if it.site != "" {
				s.err = fmt.Errorf("%s (launched at %s): %w", it.name, it.site, err)
			} else {
				s.err = fmt.Errorf("%s: %w", it.name, err)
			}
		}
		s.queue--
		if s.queue == 0 {
			s.cond.Broadcast()
		}
		s.mu.Unlock()
	}
}

func safeRun(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in kernel: %v", r)
		}
	}()
	return fn()
}

// Enqueue submits fn; name and site label it in errors.
func (s *Stream) Enqueue(name, site string, fn func() error) {
	s.init()
	s.mu.Lock()
	s.queue++
	s.mu.Unlock()
	s.ch <- streamItem{name, site, fn}
}

// Sync waits for all submitted work and returns (and clears) the first error.
func (s *Stream) Sync() error {
	s.init()
	s.mu.Lock()
	for s.queue > 0 {
		s.cond.Wait()
	}
	err := s.err
	s.err = nil
	s.mu.Unlock()
	return err
}
