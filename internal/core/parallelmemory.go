package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/store"
)

// maxRememberedClients bounds the clients one process remembers.
const maxRememberedClients = 10_000

// parallelMemory remembers the clients seen answering only the first of several tool
// calls (docs/PROTOCOL.md 13.4): the deployed gollm client runs the first call of a turn
// and sends back its result alone. A request whose history shows it has parallel calls
// turned off by the translator (translate.Stats.ParallelDisabled); the memory makes that
// stick to the client, its key with its User-Agent, for ttl from when it was learned, so
// its next conversations start with one call a turn instead of spending their first turn's
// extra calls. It stands in only where nothing else decides: the request's
// parallel_tool_calls, its key's and its alias's defaults and the gateway's win, and so
// does what the request's own history shows.
//
// Each process keeps the clients it learned (bounded), and writes them through to shared,
// when set, so every replica knows them (14.3): a client is known when either says so,
// and a store that fails leaves the local memory to answer. Safe for concurrent use.
type parallelMemory struct {
	ttl     time.Duration
	now     func() time.Time
	shared  store.Values
	log     *zap.Logger
	metrics *metrics.Metrics

	mu    sync.Mutex
	until map[clientKey]time.Time
}

// clientKey is what the memory knows a client by: a digest of its key's identity and its
// User-Agent (clientOf), so neither reaches the store in the clear.
type clientKey [sha256.Size]byte

// newParallelMemory returns the memory; a ttl of 0 remembers nothing.
func newParallelMemory(ttl time.Duration, now func() time.Time, shared store.Values, log *zap.Logger, m *metrics.Metrics) *parallelMemory {
	return &parallelMemory{ttl: ttl, now: now, shared: shared, log: log, metrics: m, until: map[clientKey]time.Time{}}
}

// knows reports whether req's client is remembered to answer only the first of several
// calls, for a request whose parallel tool calls nothing else decided and that offers
// tools (no call comes back otherwise).
func (m *parallelMemory) knows(ctx context.Context, req *chat.Request) bool {
	if m.ttl <= 0 || req.ParallelToolCalls != nil || len(req.Tools) == 0 {
		return false
	}
	key := clientOf(req)
	m.mu.Lock()
	until, ok := m.until[key]
	m.mu.Unlock()
	if ok && m.now().Before(until) {
		return true
	}
	if m.shared == nil {
		return false
	}
	// An error leaves the local memory's answer (14.3); the store counts and logs it.
	_, found, err := m.shared.Get(ctx, parallelKey(key))
	return err == nil && found
}

// learn remembers that req's client answers only the first of several calls, here and in
// the shared store; the first time this process learns it, it says so in one info line
// and counts it.
func (m *parallelMemory) learn(ctx context.Context, req *chat.Request) {
	if m.ttl <= 0 {
		return
	}
	key := clientOf(req)
	now := m.now()
	m.mu.Lock()
	if until, ok := m.until[key]; ok && now.Before(until) {
		m.mu.Unlock()
		return
	}
	if len(m.until) >= maxRememberedClients {
		m.forget(now)
	}
	m.until[key] = now.Add(m.ttl)
	m.mu.Unlock()
	if m.shared != nil {
		_ = m.shared.Put(ctx, parallelKey(key), []byte{'1'}, m.ttl)
	}
	m.metrics.ParallelLearned()
	m.log.Info("parallel tool calls off for a client that answers just the first of them",
		zap.String("request_id", req.ID), zap.String("key_id", req.KeyID),
		zap.String("user_agent", clip.String(req.UserAgent, clip.LogMax)), zap.Duration("ttl", m.ttl))
}

// forget makes room for one more client: the expired ones go, else one of the others. Call
// with mu held.
func (m *parallelMemory) forget(now time.Time) {
	for k, until := range m.until {
		if !now.Before(until) {
			delete(m.until, k)
		}
	}
	for k := range m.until {
		if len(m.until) < maxRememberedClients {
			return
		}
		delete(m.until, k)
	}
}

// clientOf is the client of a request: its key's identity and its User-Agent, each
// written with its length.
func clientOf(req *chat.Request) clientKey {
	h := &digest{h: sha256.New()}
	field(h, req.KeyID)
	field(h, req.UserAgent)
	var key clientKey
	h.h.Sum(key[:0])
	return key
}

// parallelKeyPrefix names the memory's values in the shared store.
const parallelKeyPrefix = "parallel:"

func parallelKey(key clientKey) string { return parallelKeyPrefix + hex.EncodeToString(key[:]) }
