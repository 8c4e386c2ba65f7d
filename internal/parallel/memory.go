// Package parallel remembers the clients that answer only the first of several tool calls
// (docs/PROTOCOL.md 13.4), so their conversations start with parallel tool calls off.
package parallel

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/store"
)

// Options configures a Memory.
type Options struct {
	// TTL is how long a client is remembered after it was learned (parallel_memory_ttl);
	// 0 remembers nothing.
	TTL time.Duration
	// Shared, when set, shares what the replicas learned (docs/PROTOCOL.md 14.3); nil
	// keeps it in this process.
	Shared store.Values
	// Metrics counts the clients learned; nil counts nothing.
	Metrics *metrics.Metrics
	// Now is the clock; nil is time.Now. Tests move it past the TTL.
	Now func() time.Time
}

// maxClients bounds the clients one process remembers.
const maxClients = 10_000

// Memory remembers the clients seen answering only the first of several tool calls: the
// deployed gollm client runs the first call of a turn and sends back its result alone. A
// request whose history shows it has parallel calls turned off by the translator
// (translate.Stats.ParallelDisabled); the memory makes that stick to the client, its key
// with its User-Agent, for the TTL from when it was learned, so its next conversations
// start with one call a turn instead of spending their first turn's extra calls. It
// stands in only where nothing else decides: the request's parallel_tool_calls, its key's,
// its alias's and the gateway's defaults win, and so does what the request's own history
// shows (translate.Options.FirstResultOnly).
//
// Each process keeps the clients it learned (bounded), and writes them through to the
// shared store, when there is one, so every replica knows them: a client is known when
// either says so, and a store that fails leaves the local memory to answer. Safe for
// concurrent use.
type Memory struct {
	opts Options
	log  *zap.Logger

	mu    sync.Mutex
	until map[client]time.Time
}

// client is what the memory knows a client by: a digest of its key's identity and its
// User-Agent (clientOf), so neither reaches the store in the clear.
type client [sha256.Size]byte

// New returns a Memory.
func New(opts Options, log *zap.Logger) *Memory {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Memory{opts: opts, log: log, until: map[client]time.Time{}}
}

// Knows reports whether req's client is remembered to answer only the first of several
// calls, for a request whose parallel tool calls nothing else decided (its defaults
// applied) and that offers tools (no call comes back otherwise).
func (m *Memory) Knows(ctx context.Context, req *chat.Request) bool {
	if m.opts.TTL <= 0 || req.ParallelToolCalls != nil || len(req.Tools) == 0 {
		return false
	}
	c := clientOf(req)
	m.mu.Lock()
	until, ok := m.until[c]
	m.mu.Unlock()
	if ok && m.opts.Now().Before(until) {
		return true
	}
	if m.opts.Shared == nil {
		return false
	}
	// An error leaves the local memory's answer (14.3); the store counts and logs it.
	_, found, err := m.opts.Shared.Get(ctx, key(c))
	return err == nil && found
}

// Learn remembers that req's client answers only the first of several calls, here and in
// the shared store; the first time this process learns it, it says so in one info line
// and counts it.
func (m *Memory) Learn(ctx context.Context, req *chat.Request) {
	if m.opts.TTL <= 0 {
		return
	}
	c := clientOf(req)
	now := m.opts.Now()
	m.mu.Lock()
	if until, ok := m.until[c]; ok && now.Before(until) {
		m.mu.Unlock()
		return
	}
	if len(m.until) >= maxClients {
		m.forget(now)
	}
	m.until[c] = now.Add(m.opts.TTL)
	m.mu.Unlock()
	if m.opts.Shared != nil {
		_ = m.opts.Shared.Put(ctx, key(c), []byte{'1'}, m.opts.TTL)
	}
	m.opts.Metrics.ParallelLearned()
	m.log.Info("parallel tool calls off for a client that answers just the first of them",
		zap.String("request_id", req.ID), zap.String("key_id", req.KeyID),
		zap.String("user_agent", clip.String(req.UserAgent, clip.LogMax)), zap.Duration("ttl", m.opts.TTL))
}

// forget makes room for one more client: the expired ones go, else one of the others. Call
// with mu held.
func (m *Memory) forget(now time.Time) {
	for c, until := range m.until {
		if !now.Before(until) {
			delete(m.until, c)
		}
	}
	for c := range m.until {
		if len(m.until) < maxClients {
			return
		}
		delete(m.until, c)
	}
}

// clientOf is the client of a request: its key's identity and its User-Agent, each
// written with its length, so no two clients' parts run together into the same bytes.
func clientOf(req *chat.Request) client {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{req.KeyID, req.UserAgent} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var c client
	h.Sum(c[:0])
	return c
}

// keyPrefix names the memory's values in the shared store.
const keyPrefix = "parallel:"

func key(c client) string { return keyPrefix + hex.EncodeToString(c[:]) }
