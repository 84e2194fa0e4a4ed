package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/retry"
	"github.com/leasehold/leasehold/script"
)

// ErrClosed is returned by Watch once the hub is closed.
var ErrClosed = errors.New("hub: closed")

// Hub turns messages and invalidations into wake-ups. The zero value is not
// usable; create one with NewHub.
type Hub struct {
	rc       rueidis.Client
	tracking bool
	sharded  bool // SSUBSCRIBE rather than SUBSCRIBE
	// tracker reads a lock key on a connection whose invalidations come
	// back to InvalidateKeys, and forget drops such a read not made yet
	// (see Tracker); nil for none.
	tracker, forget func(key string)

	wakeups atomic.Uint64
	mu      sync.Mutex
	topics  map[string]*topic   // channel -> live topic
	byKey   map[string][]*topic // lock key -> topics woken by its invalidation
	tracked map[string]struct{} // lock keys the tracker read and Redis has not invalidated since
	muted   map[string]struct{} // tracked keys whose next invalidation is a pass's own write (see Mute)
	closing map[string]*topic   // channel -> topic still unsubscribing
	closed  bool
	done    chan struct{}   // closed by Close
	quit    context.Context // bounds the unsubscriptions once Close has begun
	wg      sync.WaitGroup

	warn    func(error) // hears the hub's warnings; nil for none
	refused sync.Once   // warns of a refused subscription once
}

// NewHub returns a hub subscribing through rc. Without Tracking, Track does
// nothing and expiries are noticed through the waiters' TTL timers only.
func NewHub(rc rueidis.Client, opts ...HubOption) *Hub {
	h := &Hub{
		rc:      rc,
		topics:  make(map[string]*topic),
		byKey:   make(map[string][]*topic),
		tracked: make(map[string]struct{}),
		muted:   make(map[string]struct{}),
		closing: make(map[string]*topic),
		done:    make(chan struct{}),
		quit:    context.Background(),
	}
	for _, o := range opts {
		if o != nil {
			o.applyHub(h)
		}
	}
	return h
}

// A HubOption configures a Hub in NewHub.
type HubOption interface{ applyHub(*Hub) }

type hubOptionFunc func(*Hub)

func (f hubOptionFunc) applyHub(h *Hub) { f(h) }

// Tracking says that rc's client-side-cache invalidations reach Invalidate
// (the hook is wired when the rueidis client is created): Track then reads
// a waiter's key through the cache, so that Redis tells of its next change.
// Default: no tracking.
func Tracking() HubOption { return hubOptionFunc(func(h *Hub) { h.tracking = true }) }

// Tracker has Track hand a waiter's key to read, a key at a time, to a
// reader of its own: one that reads it on a connection with CLIENT TRACKING
// on, whose invalidations it passes to InvalidateKeys, and that calls
// InvalidateKeys itself when it finds the key gone. The hub asks again for
// a key only once Redis has invalidated it. When the key's last waiter
// leaves, forget drops its read if not made yet: read then, a key gone for
// good (a name used once) would stay in Redis' tracking table, which keeps
// a key read with tracking until it is written again. Both are called with
// the hub's lock held and must not block or call the hub: the read is made
// later, on the reader's own goroutine. It takes the place of Tracking,
// whose reads through rc's cache put rc's connection in rueidis' pipelined
// mode (every command then crosses two goroutines). Default: none.
func Tracker(read, forget func(key string)) HubOption {
	return hubOptionFunc(func(h *Hub) { h.tracker, h.forget = read, forget })
}

// Sharded makes the hub subscribe with SSUBSCRIBE (sharded pub/sub, Redis 7+
// in Redis Cluster), on the connection rueidis keeps to the node of the
// channel's slot, as Redisson does there by default; messages then come from
// SPUBLISH. Default: SUBSCRIBE.
func Sharded() HubOption { return hubOptionFunc(func(h *Hub) { h.sharded = true }) }

// topic is one channel's subscription and the waiters it serves.
type topic struct {
	channel  string
	key      string
	waiters  []*Waiter     // oldest first
	ready    chan struct{} // closed on the first confirmed subscription
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{} // closed when the subscription goroutine has ended
	prev     *topic        // an older topic on the channel still unsubscribing
	counted  bool          // messages are counts (see Counted)
	events   uint64        // wake-ups of any kind so far, under Hub.mu (see Mark)
	messages uint64        // messages heard so far, under Hub.mu (see Messages)
	hinted   *time.Timer   // an invalidation's wake-up, deferred (see InvalidateKeys)
}

// Waiter is one goroutine's interest in a channel.
type Waiter struct {
	h      *Hub
	t      *topic
	c      chan struct{}
	weight int // permits it waits for, on a counted channel
}

// A WatchOption configures one Watch.
type WatchOption interface{ applyWatch(*Waiter) }

type watchOptionFunc func(*Waiter)

func (f watchOptionFunc) applyWatch(w *Waiter) { f(w) }

// Counted registers the waiter as waiting for weight permits (at least 1) on
// a channel whose messages are counts, as a Redisson semaphore's channel
// (redisson_sc:{NAME}) carries the permits available after each change. A
// message N on such a channel wakes waiters whose weights add up to at most
// N, the heaviest first and, among equal weights, the longest waiting first;
// a waiter heavier than what is left is passed over, and one with a wake-up
// pending already is not counted (it will try anyway). A message of 0 or less
// wakes none; one that is not a number wakes one, as on any channel ("1"
// wakes one waiter of weight 1, not every waiter). A channel is counted once
// any of its waiters is: give the option to every Watch of the channel.
// Default: not counted.
func Counted(weight int) WatchOption {
	return watchOptionFunc(func(w *Waiter) { w.weight = max(weight, 1) })
}

// Watch registers a waiter on channel and, if it is the first, subscribes.
// key is the lock key whose invalidation also wakes the channel's waiters (""
// for none). Watch does not block: the subscription is confirmed when Ready
// is closed, and only a message published after that is sure to arrive, so
// the waiter tries its lock once more after Ready. Leave must be called.
func (h *Hub) Watch(channel, key string, opts ...WatchOption) (*Waiter, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	t := h.topics[channel]
	if t == nil {
		ctx, cancel := context.WithCancel(context.Background())
		t = &topic{channel: channel, key: key, ready: make(chan struct{}), ctx: ctx, cancel: cancel,
			done: make(chan struct{}), prev: h.closing[channel]}
		h.topics[channel] = t
		if key != "" {
			h.byKey[key] = append(h.byKey[key], t)
		}
		h.wg.Add(1)
		go h.subscribe(t)
	}
	w := &Waiter{h: h, t: t, c: make(chan struct{}, 1)}
	for _, o := range opts {
		if o != nil {
			o.applyWatch(w)
		}
	}
	t.counted = t.counted || w.weight > 0
	t.waiters = append(t.waiters, w)
	return w, nil
}

// Mark records where a channel's wake-ups stand, for Missed. Take it before
// an attempt that may end in a Watch.
type Mark struct {
	t      *topic
	events uint64
	queued bool
}

// Queued reports whether the channel had waiters of this Client when m was
// taken.
func (m Mark) Queued() bool { return m.queued }

// Mark returns the channel's mark: the zero Mark when the channel is not
// subscribed yet, with which Missed always reports true.
func (h *Hub) Mark(channel string) Mark {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[channel]
	if t == nil {
		return Mark{}
	}
	select {
	case <-t.ready:
		return Mark{t: t, events: t.events, queued: len(t.waiters) > 0}
	default:
		return Mark{}
	}
}

// Missed reports whether the waiter may have missed a wake-up since m was
// taken: unless m was taken on the waiter's channel while it was subscribed
// and nothing woke any of the channel's waiters since (a message, an
// invalidation, a resubscription), it reports true. A caller that took m
// before an attempt and Watched after the attempt failed need not try again
// before its first wake-up when Missed is false: a release after the attempt
// was either heard before the Watch (Missed is true) or will wake the
// waiter. Otherwise it should try once more after Ready, as with no mark.
func (w *Waiter) Missed(m Mark) bool {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return m.t != w.t || m.t.events != m.events
}

// Ready is closed once the channel's subscription is confirmed.
func (w *Waiter) Ready() <-chan struct{} { return w.t.ready }

// C receives a wake-up: the lock may be free, try it. A wake-up is kept
// until received, so one sent while the waiter was trying is not lost.
func (w *Waiter) C() <-chan struct{} { return w.c }

// Track makes sure the hub hears when the lock key changes or expires: with
// a Tracker, by handing the key to it unless it is tracked already, without
// waiting; with Tracking, by reading it through the client-side cache, a
// round trip only when the key is not tracked already (an invalidation ends
// tracking until the next read). That read is of the key's TYPE, which
// answers for a key of any type (a lock's hash, a semaphore's string).
// Without either it does nothing.
func (w *Waiter) Track(ctx context.Context) error {
	h, key := w.h, w.t.key
	switch {
	case key == "":
		return nil
	case h.tracker != nil:
		// Under the lock, so that a forget of the key (its last waiter
		// leaving) never comes between the two.
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, known := h.tracked[key]; !known {
			h.tracked[key] = struct{}{}
			h.tracker(key)
		}
		return nil
	case !h.tracking:
		return nil
	}
	return h.rc.DoCache(ctx, h.rc.B().Type().Key(key).Cache(), time.Minute).Error()
}

// Leave unregisters the waiter. A wake-up it received but did not act on is
// handed to the next waiter, and so is one when wakeNext is set (the waiter
// gives up after being woken, or without knowing whether its last attempt
// took the lock). The last waiter to leave drops the subscription.
func (w *Waiter) Leave(wakeNext bool) {
	h, t := w.h, w.t
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, o := range t.waiters {
		if o == w {
			t.waiters = append(t.waiters[:i], t.waiters[i+1:]...)
			break
		}
	}
	select {
	case <-w.c:
		wakeNext = true
	default:
	}
	if wakeNext {
		h.wakeOne(t)
	}
	if len(t.waiters) == 0 && h.topics[t.channel] == t {
		h.drop(t)
	}
}

// drop ends a topic with no waiters left; its goroutine unsubscribes. Called
// with h.mu held.
func (h *Hub) drop(t *topic) {
	delete(h.topics, t.channel)
	if t.key != "" {
		ts := h.byKey[t.key]
		for i, o := range ts {
			if o == t {
				ts = append(ts[:i], ts[i+1:]...)
				break
			}
		}
		if len(ts) == 0 {
			delete(h.byKey, t.key)
			// The map holds the keys waited on, no more: the next
			// waiter reads it again.
			delete(h.tracked, t.key)
			delete(h.muted, t.key)
			if h.forget != nil {
				h.forget(t.key)
			}
		} else {
			h.byKey[t.key] = ts
		}
	}
	h.closing[t.channel] = t
	if t.hinted != nil {
		t.hinted.Stop()
		t.hinted = nil
	}
	t.cancel()
}

// Warnings has the hub report to warn what puts its wake-ups at risk: a
// subscription that Redis refuses (an ACL without SUBSCRIBE), once. warn
// must not block. Default: none.
func Warnings(warn func(error)) HubOption { return hubOptionFunc(func(h *Hub) { h.warn = warn }) }

// subscribeCmd is SUBSCRIBE channel, or SSUBSCRIBE when sharded.
func (h *Hub) subscribeCmd(channel string) rueidis.Completed {
	if h.sharded {
		return h.rc.B().Ssubscribe().Channel(channel).Build()
	}
	return h.rc.B().Subscribe().Channel(channel).Build()
}

// unsubscribeCmd is UNSUBSCRIBE channel, or SUNSUBSCRIBE when sharded.
func (h *Hub) unsubscribeCmd(channel string) rueidis.Completed {
	if h.sharded {
		return h.rc.B().Sunsubscribe().Channel(channel).Build()
	}
	return h.rc.B().Unsubscribe().Channel(channel).Build()
}

// subscribe holds t's subscription until t is dropped, subscribing again after a break.
func (h *Hub) subscribe(t *topic) {
	defer h.wg.Done()
	defer close(t.done)
	if t.prev != nil {
		// An UNSUBSCRIBE of the older topic must not reach Redis after our
		// SUBSCRIBE, or it would cancel ours.
		<-t.prev.done
	}
	b := retry.Backoff(20*time.Millisecond, time.Second)
	var confirmations atomic.Int64
	hook := h.confirmHook(t, &confirmations)
	for {
		before := confirmations.Load()
		h.receive(hook, t)
		stood := confirmations.Load() > before
		if stood {
			b.Reset() // start backing off afresh
		}
		if t.ctx.Err() != nil {
			break
		}
		// The connection broke (or someone unsubscribed us): wake every
		// waiter, since a release may have gone unheard, then subscribe again:
		// at once after a subscription that stood, as rueidis would.
		h.mu.Lock()
		h.wakeAll(t)
		h.mu.Unlock()
		if stood {
			continue
		}
		select {
		case <-t.ctx.Done():
		case <-time.After(b.NextBackOff()):
		}
		if t.ctx.Err() != nil {
			break
		}
	}
	h.unsubscribe(t)
	h.mu.Lock()
	if h.closing[t.channel] == t {
		delete(h.closing, t.channel)
	}
	h.mu.Unlock()
}

// confirmHook hooks t.ctx to count t's confirmed subscriptions in n and wake on each.
func (h *Hub) confirmHook(t *topic, n *atomic.Int64) context.Context {
	// The hook runs on rueidis' reader goroutine: it only counts.
	return rueidis.WithOnSubscriptionHook(t.ctx, func(s rueidis.PubSubSubscription) {
		if s.Kind != "subscribe" && s.Kind != "ssubscribe" {
			return
		}
		if n.Add(1) == 1 {
			close(t.ready)
			return
		}
		// Subscribed again after a break: anything published in between
		// was missed, so every waiter tries again.
		h.mu.Lock()
		h.wakeAll(t)
		h.mu.Unlock()
	})
}

// receive runs one Receive of t's channel, until t is dropped or the connection breaks.
func (h *Hub) receive(hook context.Context, t *topic) {
	// A break ends this Receive. rueidis would subscribe again by
	// itself, but it waits longer before each try of one Receive (a
	// second after twenty) and never starts afresh: an old topic
	// would go deaf for a second after every break of a flapping
	// connection, its releases unheard. Cancelling as rueidis reports
	// the break hands the retry to subscribe's loop, which wakes the
	// waiters at once and backs off afresh after a subscription that
	// stood. Redis error replies (MOVED, LOADING) stay rueidis' to retry.
	ctx, cancel := context.WithCancel(hook)
	ctx = rueidis.WithOnReceiveReturnHook(ctx, func(err error, _ rueidis.CommandClient) error {
		if _, reply := rueidis.IsRedisErr(err); err != nil && !reply {
			cancel()
		}
		return err
	})
	// A command is built for each Receive: rueidis recycles a command
	// once it has been sent.
	err := h.rc.Receive(ctx, h.subscribeCmd(t.channel), func(m rueidis.PubSubMessage) { h.deliver(t, m.Message) })
	cancel()
	if e, ok := rueidis.IsRedisErr(err); ok && refusal(e) && h.warn != nil {
		h.refused.Do(func() {
			h.warn(fmt.Errorf("leasehold: subscribing to unlock messages is refused (%w): "+
				"waiters wake only on key invalidations, their timers and a retry every second or so", e))
		})
	}
}

// unsubscribe drops t's subscription in Redis, best effort, once the server
// is known not to be running a script past busy-reply-threshold.
//
// While a script is busy Redis refuses UNSUBSCRIBE with BUSY, and rueidis
// (up to at least v1.0.79) takes that refusal for the reply to the PING it
// sends after every UNSUBSCRIBE; the PING's own BUSY is then one reply too
// many, which its reader goroutine answers with a panic that kills the
// process, or hands to the next command in the pipeline (see
// docs/rueidis-unsubscribe-busy.md). So a probe that Redis refuses in the
// same way goes first, on the connection the UNSUBSCRIBE will take, and
// while it is answered BUSY the subscription is kept and the probe retried
// with backoff, for as long as the hub is open. Messages on a channel no
// waiter watches are dropped meanwhile.
func (h *Hub) unsubscribe(t *topic) {
	b := retry.Backoff(50*time.Millisecond, time.Second)
	h.mu.Lock()
	quit := h.quit
	h.mu.Unlock()
	for {
		ctx, cancel := context.WithTimeout(quit, time.Second)
		err := h.rc.Do(ctx, h.probeCmd(t.channel)).Error()
		if !retry.IsBusy(err) {
			// PONG, or a reply rueidis reads right (NOPERM, LOADING),
			// or no reply: the UNSUBSCRIBE cannot meet a busy script
			// but in the moment between the two.
			_ = h.rc.Do(ctx, h.unsubscribeCmd(t.channel)).Error()
			cancel()
			return
		}
		cancel()
		select {
		case <-h.done:
			return // the hub is closing: a closed connection drops it
		case <-time.After(b.NextBackOff()):
		}
	}
}

// probeCmd is a command that Redis refuses with BUSY whenever it would so
// refuse an UNSUBSCRIBE of channel, sent to the same node: PING, or in Redis
// Cluster EXISTS of the channel's name, a key of the channel's slot (rueidis
// sends a PING to any node). It reads nothing and tracks nothing.
func (h *Hub) probeCmd(channel string) rueidis.Completed {
	if h.rc.Mode() == rueidis.ClientModeCluster {
		return h.rc.B().Exists().Key(channel).Build()
	}
	return h.rc.B().Ping().Build()
}

// refusal reports whether e refuses a subscription for good: an ACL's
// NOPERM, or an ERR (a command renamed away); BUSY, LOADING and the like
// pass.
func refusal(e *rueidis.RedisError) bool {
	code, _, _ := strings.Cut(e.Error(), " ")
	return code == "NOPERM" || code == "ERR"
}

func (h *Hub) deliver(t *topic, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.messages++
	if t.counted {
		if n, err := strconv.ParseInt(msg, 10, 64); err == nil {
			h.wakeCount(t, n)
			return
		}
	}
	if msg == script.WakeAllMessage && !t.counted {
		h.wakeAll(t)
	} else {
		h.wakeOne(t)
	}
}

// wakeCount wakes waiters of the counted topic t whose weights add up to at
// most n, heaviest first, the longest waiting first among equals (the order
// in which a semaphore serves them: see Counted). A waiter with a wake-up
// pending already will try anyway: it is not counted. Called with h.mu held.
func (h *Hub) wakeCount(t *topic, n int64) {
	if n <= 0 {
		return
	}
	t.events++
	order := slices.Clone(t.waiters)
	slices.SortStableFunc(order, func(a, b *Waiter) int { return cmp.Compare(b.weight, a.weight) })
	for _, w := range order {
		weight := int64(max(w.weight, 1)) // a waiter watching without Counted
		if weight > n {
			continue
		}
		select {
		case w.c <- struct{}{}:
			h.wakeups.Add(1)
			if n -= weight; n == 0 {
				return
			}
		default:
		}
	}
}

// Invalidate wakes waiters of the lock keys in an invalidation message: one
// waiter per topic of each key, or of every topic when keys is nil (the cache
// was flushed). Wire it into rueidis.ClientOption.OnInvalidations.
func (h *Hub) Invalidate(keys []rueidis.RedisMessage) {
	if keys == nil {
		h.InvalidateKeys(nil)
		return
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		if key, err := k.ToString(); err == nil {
			names = append(names, key)
		}
	}
	h.InvalidateKeys(names)
}

// InvalidateKeys is Invalidate of the keys named: one waiter woken per
// topic of each key, or of every topic when keys is nil (every key's
// tracking ended: a flush, a connection made again). It does not block.
func (h *Hub) InvalidateKeys(keys []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if keys == nil {
		clear(h.tracked)
		clear(h.muted)
		for _, t := range h.topics {
			h.wakeOne(t)
		}
		return
	}
	for _, key := range keys {
		delete(h.tracked, key)
		if _, ok := h.muted[key]; ok {
			delete(h.muted, key)
			continue
		}
		for _, t := range h.byKey[key] {
			h.hint(t)
		}
	}
}

// hintGrace is how long an invalidation's wake-up waits for the unlock
// message of the same change: a release both writes the key and publishes,
// and the two arrive in either order on two connections; one wake-up for
// them, not two, saves an attempt bound to fail per Client and release.
const hintGrace = 10 * time.Millisecond

// hint wakes one of t's waiters for an invalidation of its key: at once
// when t is not subscribed (no message can come), else hintGrace later
// unless a wake-up came meanwhile (the change's message). Called with h.mu
// held.
func (h *Hub) hint(t *topic) {
	select {
	case <-t.ready:
	default:
		h.wakeOne(t)
		return
	}
	if t.hinted != nil {
		return // one deferred wake-up is pending already
	}
	events := t.events
	t.hinted = time.AfterFunc(hintGrace, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		t.hinted = nil
		if t.events == events && h.topics[t.channel] == t {
			h.wakeOne(t)
		}
	})
}

// Listening reports whether the waiter's channel is subscribed: a release's
// message reaches it, and the channel's count of listeners includes this
// hub's connection.
func (w *Waiter) Listening() bool {
	select {
	case <-w.t.ready:
		return true
	default:
		return false
	}
}

// Messages counts the messages heard on the waiter's channel so far: each a
// release that published (its own Client's or another's), where an
// invalidation may be any write of the key, a lock passed included.
// internal/handoff reads it to count the releases of others.
func (w *Waiter) Messages() uint64 {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return w.t.messages
}

// Wake wakes the waiter, unless a wake-up is pending already. It does not
// block.
func (w *Waiter) Wake() {
	select {
	case w.c <- struct{}{}:
		w.h.wakeups.Add(1)
	default:
	}
}

// Mute makes the next invalidation of key, if the hub tracks it, wake no
// one: it will be the write of a lock passed to a waiter of this Client
// (internal/handoff), which needs no attempt.
func (h *Hub) Mute(key string) {
	if key == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.tracked[key]; ok {
		h.muted[key] = struct{}{}
	}
}

// wakeOne wakes the longest-waiting waiter that has no wake-up pending; if
// all have one, nothing more is needed. Called with h.mu held.
func (h *Hub) wakeOne(t *topic) {
	t.events++
	for _, w := range t.waiters {
		select {
		case w.c <- struct{}{}:
			h.wakeups.Add(1)
			return
		default:
		}
	}
}

// wakeAll wakes every waiter of t. Called with h.mu held.
func (h *Hub) wakeAll(t *topic) {
	t.events++
	for _, w := range t.waiters {
		select {
		case w.c <- struct{}{}:
			h.wakeups.Add(1)
		default:
		}
	}
}

// Stats is a snapshot of the hub's counters.
type Stats struct {
	// Subscriptions is the number of channels subscribed or being subscribed.
	Subscriptions int
	// Waiters is the number of registered waiters.
	Waiters int
	// Wakeups counts wake-ups delivered since the hub started.
	Wakeups uint64
}

// Stats returns the hub's counters.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Stats{Subscriptions: len(h.topics), Wakeups: h.wakeups.Load()}
	for _, t := range h.topics {
		s.Waiters += len(t.waiters)
	}
	return s
}

// Close drops every subscription and waits for the hub's goroutines to end,
// giving up the UNSUBSCRIBEs Redis has not answered when ctx ends (a closed
// connection drops them anyway). Waiters still registered are woken; later
// Watch calls return ErrClosed.
func (h *Hub) Close(ctx context.Context) {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		h.quit = ctx
		close(h.done)
		for _, t := range h.topics {
			h.wakeAll(t)
			h.drop(t)
		}
	}
	h.mu.Unlock()
	h.wg.Wait()
}
