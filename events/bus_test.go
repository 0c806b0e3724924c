package events_test

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/events"
)

func TestPublishFillsZeroTimeFromClock(t *testing.T) {
	given := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		in   time.Time
		want time.Time
	}{
		{"zero time is stamped", time.Time{}, t0},
		{"explicit time is kept", given, given},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus(events.WithClock(fixedClock))
			sub := bus.Subscribe(t.Context())
			bus.Publish(events.Event{Data: events.Custom{}, Time: tt.in})
			bus.Close()

			got := drain(t, sub)
			require.Len(t, got, 1)
			require.True(t, tt.want.Equal(got[0].Ev.Time), "got %v, want %v", got[0].Ev.Time, tt.want)
		})
	}
}

func TestPublishNeverBlocksOnSlowSubscriber(t *testing.T) {
	const published = 10_000
	tests := []struct {
		name  string
		opts  []events.Option
		queue int
	}{
		{"queue of one", []events.Option{events.WithBufferSize(1)}, 1},
		{"small queue", []events.Option{events.WithBufferSize(4)}, 4},
		{"default queue", nil, events.DefaultBufferSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus(tt.opts...)
			sub := bus.Subscribe(t.Context()) // never read while publishing

			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := range published {
					bus.Publish(ev(events.KindCustom, "r", i))
				}
			}()
			<-done // would hang (and time the test out) if Publish blocked

			require.Equal(t, published-tt.queue, sub.Lost())
			bus.Close()
			got := drain(t, sub)
			require.Len(t, got, tt.queue+1)
			require.Equal(t, published-tt.queue, got[0].Lost)
			for i, it := range got[1:] {
				require.Equal(t, published-tt.queue+i, it.Ev.Step)
			}
		})
	}
}

func TestSlowSubscriberLosesOldestAndIsTold(t *testing.T) {
	type step struct {
		publish []int  // iterations to publish
		read    []item // items to read afterwards
	}
	tests := []struct {
		name  string
		queue int
		steps []step
		tail  []item // read after Close
	}{
		{
			name:  "within capacity nothing is lost",
			queue: 3,
			steps: []step{{publish: []int{1, 2, 3}}},
			tail:  delivered(evs(1, 2, 3)...),
		},
		{
			name:  "overflow drops oldest",
			queue: 3,
			steps: []step{{publish: []int{1, 2, 3, 4, 5}}},
			tail:  append([]item{{Lost: 2}}, delivered(evs(3, 4, 5)...)...),
		},
		{
			name:  "queue of one keeps only the newest",
			queue: 1,
			steps: []step{{publish: []int{1, 2, 3, 4}}},
			tail:  append([]item{{Lost: 3}}, delivered(evs(4)...)...),
		},
		{
			name:  "each gap is reported separately",
			queue: 2,
			steps: []step{
				{publish: []int{1, 2, 3, 4}, read: append([]item{{Lost: 2}}, delivered(evs(3)...)...)},
				{publish: []int{5, 6, 7}, read: append([]item{{Lost: 2}}, delivered(evs(6)...)...)},
				{publish: []int{8}},
			},
			tail: delivered(evs(7, 8)...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus(events.WithBufferSize(tt.queue))
			sub := bus.Subscribe(t.Context())
			next, stop := iter.Pull2(sub.Events())
			defer stop()

			for _, st := range tt.steps {
				for _, e := range evs(st.publish...) {
					bus.Publish(e)
				}
				var got []item
				for range st.read {
					e, err, ok := next()
					require.True(t, ok)
					got = append(got, toItem(t, e, err))
				}
				require.Empty(t, cmp.Diff(st.read, got))
			}

			bus.Close()
			var got []item
			for {
				e, err, ok := next()
				if !ok {
					break
				}
				got = append(got, toItem(t, e, err))
			}
			require.Empty(t, cmp.Diff(tt.tail, got))
		})
	}
}

func TestCloseEndsEverySubscription(t *testing.T) {
	tests := []struct {
		name           string
		iterateFirst   bool // start ranging before events are published
		subscriberSize int
	}{
		{"subscribers ranging before close", true, 5},
		{"subscribers ranging only after close", false, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus()
			subs := make([]*events.Subscription, tt.subscriberSize)
			for i := range subs {
				subs[i] = bus.Subscribe(t.Context())
			}
			results := make([][]item, len(subs))
			var wg sync.WaitGroup
			start := func() {
				for i, s := range subs {
					wg.Go(func() {
						var got []item
						for e, err := range s.Events() {
							got = append(got, toItem(t, e, err))
						}
						results[i] = got
					})
				}
			}
			if tt.iterateFirst {
				start()
			}
			want := evs(1, 2, 3)
			for _, e := range want {
				bus.Publish(e)
			}
			bus.Close()
			if !tt.iterateFirst {
				start()
			}
			wg.Wait() // every iteration ended

			for i, got := range results {
				require.Empty(t, cmp.Diff(delivered(want...), got), "subscriber %d", i)
			}
			require.Zero(t, bus.Subscribers())
		})
	}
}

func TestPublishAfterCloseIsNoop(t *testing.T) {
	bus := events.NewBus()
	sub := bus.Subscribe(t.Context())
	bus.Publish(ev(events.KindCustom, "r", 1))
	bus.Close()
	bus.Publish(ev(events.KindCustom, "r", 2))

	require.Empty(t, cmp.Diff(delivered(evs(1)...), drain(t, sub)))
}

func TestCloseIsIdempotent(t *testing.T) {
	bus := events.NewBus()
	sub := bus.Subscribe(t.Context())
	bus.Close()
	bus.Close()
	require.Empty(t, drain(t, sub))
}

func TestSubscribeAfterCloseEndsImmediately(t *testing.T) {
	bus := events.NewBus()
	bus.Close()
	sub := bus.Subscribe(t.Context())
	require.Empty(t, drain(t, sub))
	require.Zero(t, bus.Subscribers())
}

func TestSubscriberContextCancelUnsubscribes(t *testing.T) {
	tests := []struct {
		name      string
		iterating bool
	}{
		{"while iterating", true},
		{"without iterating", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus()
			defer bus.Close()
			other := bus.Subscribe(t.Context())
			ctx, cancel := context.WithCancel(t.Context())
			sub := bus.Subscribe(ctx)
			require.Equal(t, 2, bus.Subscribers())

			if tt.iterating {
				first := make(chan events.Event)
				ended := make(chan struct{})
				go func() {
					defer close(ended)
					for e := range sub.Events() {
						first <- e
					}
				}()
				bus.Publish(ev(events.KindCustom, "r", 1))
				require.Equal(t, 1, (<-first).Step)
				cancel()
				<-ended // the iteration ended
				require.Equal(t, 1, bus.Subscribers())
			} else {
				bus.Publish(ev(events.KindCustom, "r", 1))
				cancel()
				settle(func() bool { return bus.Subscribers() == 1 })
				require.Equal(t, 1, bus.Subscribers())
				require.Empty(t, drain(t, sub), "queued events are discarded on cancel")
			}

			bus.Publish(ev(events.KindCustom, "r", 2))
			require.Empty(t, drain(t, sub))
			bus.Close()
			require.Len(t, drain(t, other), 2, "other subscribers are unaffected")
		})
	}
}

func TestSubscriptionCloseUnsubscribes(t *testing.T) {
	bus := events.NewBus()
	defer bus.Close()
	sub := bus.Subscribe(t.Context())
	bus.Publish(ev(events.KindCustom, "r", 1))

	sub.Close()
	sub.Close() // idempotent
	require.Zero(t, bus.Subscribers())
	bus.Publish(ev(events.KindCustom, "r", 2))
	require.Empty(t, drain(t, sub))
}

func TestBreakingOutOfLoopKeepsSubscription(t *testing.T) {
	bus := events.NewBus()
	sub := bus.Subscribe(t.Context())
	for _, e := range evs(1, 2, 3) {
		bus.Publish(e)
	}
	for e := range sub.Events() {
		require.Equal(t, 1, e.Step)
		break
	}
	require.Equal(t, 1, bus.Subscribers())
	bus.Publish(ev(events.KindCustom, "r", 4))
	bus.Close()
	require.Empty(t, cmp.Diff(delivered(evs(2, 3, 4)...), drain(t, sub)))
}

func TestFilterByRunIDAndKind(t *testing.T) {
	all := []events.Event{
		ev(events.KindNodeStarted, "a", 1),
		ev(events.KindToolCall, "a", 1),
		ev(events.KindToolCall, "b", 1),
		ev(events.KindError, "b", 2),
		ev(events.KindRunEnded, "c", 3),
	}
	tests := []struct {
		name string
		opts []events.SubscribeOption
		want []events.Event
	}{
		{"no filter", nil, all},
		{"one run", []events.SubscribeOption{events.FilterRunIDs("a")}, all[0:2]},
		{"several runs", []events.SubscribeOption{events.FilterRunIDs("a", "c")}, []events.Event{all[0], all[1], all[4]}},
		{"run options add up", []events.SubscribeOption{events.FilterRunIDs("b"), events.FilterRunIDs("c")}, all[2:5]},
		{"one kind", []events.SubscribeOption{events.FilterKinds(events.KindToolCall)}, all[1:3]},
		{"several kinds", []events.SubscribeOption{events.FilterKinds(events.KindError, events.KindRunEnded)}, all[3:5]},
		{"run and kind", []events.SubscribeOption{events.FilterRunIDs("b"), events.FilterKinds(events.KindToolCall)}, all[2:3]},
		{"empty filters match everything", []events.SubscribeOption{events.FilterRunIDs(), events.FilterKinds()}, all},
		{"unknown run matches nothing", []events.SubscribeOption{events.FilterRunIDs("zzz")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus()
			sub := bus.Subscribe(t.Context(), tt.opts...)
			for _, e := range all {
				bus.Publish(e)
			}
			bus.Close()
			require.Empty(t, cmp.Diff(delivered(tt.want...), drain(t, sub)))
		})
	}
}

func TestQueueSizeOverridesBusDefault(t *testing.T) {
	bus := events.NewBus(events.WithBufferSize(100))
	defer bus.Close()
	small := bus.Subscribe(t.Context(), events.QueueSize(2))
	large := bus.Subscribe(t.Context())
	for i := range 10 {
		bus.Publish(ev(events.KindCustom, "r", i))
	}
	require.Equal(t, 8, small.Lost())
	require.Zero(t, large.Lost())
}

func TestConcurrentPublishersDeliverEverythingInOneOrder(t *testing.T) {
	const publishers, perPublisher = 8, 500
	bus := events.NewBus(events.WithBufferSize(publishers * perPublisher))
	subs := []*events.Subscription{bus.Subscribe(t.Context()), bus.Subscribe(t.Context())}

	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range perPublisher {
				bus.Publish(ev(events.KindCustom, fmt.Sprint(p), i))
			}
		})
	}
	wg.Wait()
	bus.Close()

	var orders [][]item
	for _, s := range subs {
		got := drain(t, s)
		require.Len(t, got, publishers*perPublisher)
		next := map[string]int{}
		for _, it := range got {
			require.Zero(t, it.Lost)
			require.Equal(t, next[it.Ev.RunID], it.Ev.Step, "per-publisher order")
			next[it.Ev.RunID]++
		}
		orders = append(orders, got)
	}
	require.Empty(t, cmp.Diff(orders[0], orders[1]), "all subscribers see the same order")
}

func TestConcurrentPublishSubscribeCancelCloseIsRaceFree(t *testing.T) {
	bus := events.NewBus(events.WithBufferSize(8))
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				bus.Publish(ev(events.KindCustom, fmt.Sprint(p), i))
			}
		})
	}
	for range 8 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(t.Context())
			sub := bus.Subscribe(ctx)
			n := 0
			for range sub.Events() {
				if n++; n == 50 {
					cancel()
				}
			}
			cancel()
		})
	}
	wg.Go(func() {
		sub := bus.Subscribe(t.Context())
		for range sub.Events() {
			_ = sub.Lost()
		}
	})
	for range 4 {
		wg.Go(func() {
			runtime.Gosched()
			sub := bus.Subscribe(t.Context())
			sub.Close()
		})
	}
	wg.Go(func() {
		for range 20 {
			runtime.Gosched()
		}
		bus.Close()
	})
	wg.Wait() // every iteration ended: cancelled, or by Close
	require.Zero(t, bus.Subscribers())
}

func TestNoGoroutineLeaks(t *testing.T) {
	before := runtime.NumGoroutine()

	bus := events.NewBus(events.WithBufferSize(4))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 6 {
		sub := bus.Subscribe(ctx)
		wg.Go(func() {
			for range sub.Events() {
				if i%2 == 0 {
					time.Sleep(time.Microsecond) // slow consumer
				}
			}
		})
	}
	// A subscriber nobody iterates, cancelled: its AfterFunc must not linger.
	idleCtx, idleCancel := context.WithCancel(context.Background())
	_ = bus.Subscribe(idleCtx)
	// A subscriber whose context outlives the bus.
	_ = bus.Subscribe(context.Background())

	for i := range 100 {
		bus.Publish(ev(events.KindCustom, "r", i))
	}
	idleCancel()
	bus.Close()
	wg.Wait()
	cancel()

	settle(func() bool { return runtime.NumGoroutine() <= before })
	require.LessOrEqual(t, runtime.NumGoroutine(), before)
}
