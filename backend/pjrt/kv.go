//go:build pjrt

package pjrt

/*
#include <stdlib.h>
#include <stdint.h>
#include "capi_spmd.h"
*/
import "C"

import (
	"context"
	"sync"
	"time"
	"unsafe"
)

// KeyValueStore is the rendezvous store a multi-process PJRT client uses
// to exchange its topology and collective ids with the other processes
// (PJRT_Client_Create's key-value callbacks). dist.Store (and so
// dist.TCPStore) satisfies it.
type KeyValueStore interface {
	// Set stores value under key.
	Set(ctx context.Context, key string, value []byte) error
	// Get returns key's value, waiting for it up to timeout.
	Get(ctx context.Context, key string, timeout time.Duration) ([]byte, error)
}

// KVPrefix is put before every key the plugin stores, so that a client's
// keys do not collide with the other users of a shared store.
const KVPrefix = "pjrt/"

// tryGetWait is how long a try-get (PJRT's non-blocking get) waits, and
// noTimeout how long a get without a timeout does.
const (
	tryGetWait = 10 * time.Millisecond
	noTimeout  = 24 * time.Hour
)

// The stores handed to C, by handle: cgo must not keep Go pointers, so
// the callbacks receive a number.
var (
	kvMu     sync.Mutex
	kvStores = map[uintptr]KeyValueStore{}
	kvNext   uintptr
)

func registerKV(s KeyValueStore) uintptr {
	kvMu.Lock()
	defer kvMu.Unlock()
	kvNext++
	kvStores[kvNext] = s
	return kvNext
}

func unregisterKV(h uintptr) {
	kvMu.Lock()
	defer kvMu.Unlock()
	delete(kvStores, h)
}

func kvStore(h uintptr) KeyValueStore {
	kvMu.Lock()
	defer kvMu.Unlock()
	return kvStores[h]
}

// PJRT error codes the callbacks return (PJRT_Error_Code).
const (
	pjrtDeadlineExceeded = 4
	pjrtNotFound         = 5
	pjrtInternal         = 13
)

//export goKVGet
func goKVGet(h C.uintptr_t, key *C.char, keyLen C.size_t, timeoutMS C.int, try C.int, val **C.char, valLen *C.size_t, msg **C.char) C.int {
	s := kvStore(uintptr(h))
	k := KVPrefix + C.GoStringN(key, C.int(keyLen))
	if s == nil {
		*msg = C.CString("pjrt: key-value store of a closed client")
		return pjrtInternal
	}
	wait := time.Duration(timeoutMS) * time.Millisecond
	if timeoutMS <= 0 {
		wait = noTimeout
	}
	if try != 0 {
		wait = tryGetWait
	}
	v, err := s.Get(context.Background(), k, wait)
	if err != nil {
		*msg = C.CString("pjrt: key-value get " + k + ": " + err.Error())
		if try != 0 {
			return pjrtNotFound
		}
		return pjrtDeadlineExceeded
	}
	p := C.malloc(C.size_t(len(v) + 1))
	if len(v) > 0 {
		copy(unsafe.Slice((*byte)(p), len(v)), v)
	}
	*val, *valLen = (*C.char)(p), C.size_t(len(v))
	return 0
}

//export goKVPut
func goKVPut(h C.uintptr_t, key *C.char, keyLen C.size_t, val *C.char, valLen C.size_t, msg **C.char) C.int {
	s := kvStore(uintptr(h))
	k := KVPrefix + C.GoStringN(key, C.int(keyLen))
	if s == nil {
		*msg = C.CString("pjrt: key-value store of a closed client")
		return pjrtInternal
	}
	if err := s.Set(context.Background(), k, C.GoBytes(unsafe.Pointer(val), C.int(valLen))); err != nil {
		*msg = C.CString("pjrt: key-value put " + k + ": " + err.Error())
		return pjrtInternal
	}
	return 0
}

// kvCall runs one key-value callback through C as a plugin would (op 0
// put, 1 get, 2 try-get) on the store registered under h, returning the
// value got, or the PJRT error code and message the callback reported.
// It checks the callbacks without a multi-process plugin.
func kvCall(h uintptr, op int, key string, val []byte, timeout time.Duration) ([]byte, int, string) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	cv := C.CBytes(append(val, 0))
	defer C.free(cv)
	var out, msg *C.char
	var n C.size_t
	code := C.gp_kv_call(C.uintptr_t(h), C.int(op), ck, C.size_t(len(key)), (*C.char)(cv), C.size_t(len(val)),
		C.int(timeout.Milliseconds()), &out, &n, &msg)
	var s string
	if msg != nil {
		s = C.GoString(msg)
		C.free(unsafe.Pointer(msg))
	}
	var v []byte
	if out != nil {
		v = C.GoBytes(unsafe.Pointer(out), C.int(n))
		C.free(unsafe.Pointer(out))
	}
	return v, int(code), s
}
