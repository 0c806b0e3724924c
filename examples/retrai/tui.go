package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
)

// tuiCommand is `retrai tui`: `retrai run` with a terminal UI. It starts the
// run the flags describe (the offline demo by default) or resumes one
// (--resume), shows its events live with a status line, lets the human
// approve (a) or abort (x) its human checks, and quits on q — the run, if
// still going, is then interrupted and can be resumed. After the UI it
// prints the run's summary; the exit code is that of `retrai run`. It needs
// a terminal: without one it fails before it records a run.
func tuiCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := parseRunFlagsOf("tui", "Shows a run in a terminal UI: its events live, a status line, a/x to approve/abort a\nhuman check, q to quit. With no model configured, runs the offline demo.", args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitAchieved
	}
	if err != nil {
		return exitUsage
	}
	if tuiNeedsTerminal && (!isTerminal(stdin) || !isTerminalOutput(stdout)) {
		fmt.Fprintln(stderr, "retrai tui: needs a terminal: its standard input and output are not both one here.\n  Use retrai run, which prints the same progress as plain lines (and reads human-check answers from standard input).")
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "retrai:", err)
		return exitNotDone
	}
	m, run, _, code := openRun(ctx, f, stdout, stderr)
	if m == nil {
		return code
	}
	defer m.Close()
	if name, ok := strings.CutPrefix(run.Model, demoPrefix); ok {
		printDemoNotice(stdout, name, run.Cwd, displayDB(m.DB()), f.resume != "")
	}

	// Subscribe before the run starts, so that no event is missed.
	subCtx, unsubscribe := context.WithCancel(context.WithoutCancel(ctx))
	defer unsubscribe()
	sub := m.Bus().Subscribe(subCtx, events.FilterRunIDs(run.ID), events.QueueSize(1<<14))
	msgs := make(chan tea.Msg)
	go pumpEvents(subCtx, sub, msgs)

	switch {
	case f.resume == "":
		err = m.Start(ctx, run.ID)
	case run.Status == runs.StatusWaiting:
		// The human answers the pending check in the UI.
	default:
		err = m.Resume(ctx, run.ID, "")
	}
	if err != nil {
		return fail(err)
	}
	if cur, err := m.Get(ctx, run.ID); err == nil {
		run = cur
	}

	d := &decider{m: m}
	model := newTUIModel(ctx, d, run, displayDB(m.DB()), msgs)
	model.altScreen = isTerminal(stdin) && isTerminalOutput(stdout)
	// The size until the terminal tells it; a screen that is not a terminal
	// keeps it.
	opts := []tea.ProgramOption{
		tea.WithContext(ctx), tea.WithInput(stdin), tea.WithOutput(stdout),
		tea.WithWindowSize(defaultTUIWidth, defaultTUIHeight),
	}
	_, err = tea.NewProgram(model, opts...).Run()
	d.close()
	unsubscribe()
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, tea.ErrInterrupted) {
		fmt.Fprintln(stderr, "retrai:", err)
	}
	// A run still executing is interrupted: it can be resumed later.
	_ = m.Cancel(run.ID)
	final, err := m.Wait(context.WithoutCancel(ctx), run.ID)
	if err != nil {
		return fail(err)
	}
	return finish(stdout, m, final)
}

// tuiNeedsTerminal makes `retrai tui` refuse to run without a terminal;
// tests that drive it through pipes turn it off.
var tuiNeedsTerminal = true

// pumpEvents sends the events of sub to msgs until sub or ctx ends, then
// closes msgs.
func pumpEvents(ctx context.Context, sub *events.Subscription, msgs chan<- tea.Msg) {
	defer close(msgs)
	for ev, err := range sub.Events() {
		var msg tea.Msg = eventMsg{ev}
		if lost, ok := errors.AsType[*events.LostError](err); ok {
			msg = lostMsg{lost.N}
		}
		select {
		case msgs <- msg:
		case <-ctx.Done():
			return
		}
	}
}

// decider answers human checks for the UI, until it is closed (the UI
// quit): a decision made as the UI quits does not restart the run behind
// its back.
type decider struct {
	m      *runs.Manager
	mu     sync.Mutex
	closed bool
}

func (d *decider) resume(ctx context.Context, id, decision string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("the UI has quit")
	}
	return d.m.Resume(ctx, id, decision)
}

func (d *decider) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// Messages of the TUI.
type (
	// eventMsg is an event of the run.
	eventMsg struct{ ev events.Event }
	// lostMsg reports events dropped because the UI fell behind.
	lostMsg struct{ n int }
	// streamEndMsg: no more events will come.
	streamEndMsg struct{}
	// decidedMsg is the outcome of sending a human check's decision.
	decidedMsg struct {
		decision string
		seq      int // the human check answered
		err      error
	}
)

// maxTUILines caps the log the TUI keeps.
const maxTUILines = 5000

// The size of the TUI's screen when the terminal does not tell it.
const (
	defaultTUIWidth  = 100
	defaultTUIHeight = 30
)

// tuiModel is the Bubble Tea model of `retrai tui`: the run's event log
// (rendered as `retrai run` prints it), a status line and the keys.
type tuiModel struct {
	ctx    context.Context
	d      *decider
	run    runs.Run
	events <-chan tea.Msg // nil: none (the events come by other means)

	buf   bytes.Buffer // the renderer's output not yet split into lines
	r     *renderer
	lines []string

	status    string // the run's status
	iteration int
	maxIter   int
	tokens    int
	goal      string // the last goal check, e.g. "✗ not yet"
	question  string // the pending human check's
	humanSeq  int    // counts the human checks seen
	deciding  bool   // a decision is on its way
	errText   string
	ended     bool
	model     string // what the model call is doing, while one is going on

	width, height int
	altScreen     bool // the UI takes the whole terminal
}

// newTUIModel returns the model of the UI of run, whose events come on
// msgs; d answers its human checks; db is shown in the header.
func newTUIModel(ctx context.Context, d *decider, run runs.Run, db string, msgs <-chan tea.Msg) *tuiModel {
	t := &tuiModel{
		ctx:       ctx,
		d:         d,
		run:       run,
		events:    msgs,
		status:    string(run.Status),
		iteration: run.Iteration,
		maxIter:   run.MaxIterations,
		tokens:    run.TotalTokens,
		width:     defaultTUIWidth,
		height:    defaultTUIHeight,
	}
	t.r = newRenderer(&t.buf, run.MaxIterations)
	printHeader(&t.buf, run, run.Model, db)
	if run.Status == runs.StatusWaiting {
		t.question = run.Question
		t.humanSeq = 1
		fmt.Fprintf(&t.buf, "  ? %s\n", run.Question)
	}
	t.flush()
	return t
}

// Init implements tea.Model.
func (t *tuiModel) Init() tea.Cmd { return t.listen() }

// listen waits for the next event.
func (t *tuiModel) listen() tea.Cmd {
	if t.events == nil {
		return nil
	}
	ch := t.events
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return streamEndMsg{}
		}
		return msg
	}
}

// waiting reports whether the run waits for a human and no answer is on
// its way.
func (t *tuiModel) waiting() bool {
	return t.status == string(runs.StatusWaiting) && !t.deciding
}

// Update implements tea.Model.
func (t *tuiModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		t.width, t.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return t, tea.Quit
		case "a":
			return t, t.decide(runs.DecisionApprove)
		case "x":
			return t, t.decide(runs.DecisionAbort)
		}
	case eventMsg:
		t.apply(msg.ev)
		return t, t.listen()
	case lostMsg:
		t.lines = append(t.lines, fmt.Sprintf("  (%d events not shown)", msg.n))
		return t, t.listen()
	case streamEndMsg:
		t.events = nil
	case decidedMsg:
		t.deciding = false
		if msg.err != nil {
			t.errText = fmt.Sprintf("%s: %v", msg.decision, msg.err)
			break
		}
		t.errText = ""
		if msg.seq == t.humanSeq && t.status == string(runs.StatusWaiting) {
			t.status = string(runs.StatusRunning) // unless it asked again already
		}
	}
	return t, nil
}

// decide sends the decision on the pending human check, if there is one.
func (t *tuiModel) decide(decision string) tea.Cmd {
	if !t.waiting() {
		return nil
	}
	t.deciding, t.errText = true, ""
	ctx, d, id, seq := t.ctx, t.d, t.run.ID, t.humanSeq
	return func() tea.Msg {
		return decidedMsg{decision: decision, seq: seq, err: d.resume(ctx, id, decision)}
	}
}

// apply records ev: in the log and in the status.
func (t *tuiModel) apply(ev events.Event) {
	t.r.render(ev)
	switch ev.Data.(type) {
	case runs.ModelProgress, events.ModelCall:
	default:
		t.model = ""
	}
	switch p := ev.Data.(type) {
	case runs.ModelProgress:
		t.model = modelStatus(p)
	case events.NodeStarted:
		t.status = string(runs.StatusRunning)
	case retrai.IterationStarted:
		t.iteration = p.Iteration
		if p.MaxIterations > 0 {
			t.maxIter = p.MaxIterations
		}
	case events.ModelCall:
		t.tokens += p.TotalTokens
	case retrai.GoalCheck:
		if p.Achieved {
			t.goal = "✓ achieved"
		} else {
			t.goal = "✗ not yet"
		}
		t.tokens = p.TotalTokens
		if p.MaxIterations > 0 {
			t.maxIter = p.MaxIterations
		}
	case retrai.HumanCheck:
		t.status = string(runs.StatusWaiting)
		t.question = p.Question
		t.humanSeq++
	case retrai.HumanDecision:
		t.status = string(runs.StatusRunning)
	case runs.Ended:
		t.ended = true
		t.status = string(p.Status)
		t.tokens, t.iteration = p.TotalTokens, p.Iteration
		line := "■ run ended: " + t.status
		if p.Reason != "" {
			line += " — " + oneLine(p.Reason)
		}
		if p.Error != "" {
			line += " — error: " + oneLine(p.Error)
		}
		fmt.Fprintf(&t.buf, "%s\n", line)
	}
	t.flush()
}

// flush moves the complete lines the renderer wrote to the log.
func (t *tuiModel) flush() {
	for {
		line, err := t.buf.ReadString('\n')
		if err != nil { // an incomplete line: keep it for later
			rest := line
			t.buf.Reset()
			t.buf.WriteString(rest)
			break
		}
		t.lines = append(t.lines, strings.TrimRight(line, "\n"))
	}
	if n := len(t.lines) - maxTUILines; n > 0 {
		t.lines = append(t.lines[:0:0], t.lines[n:]...)
	}
}

var (
	tuiTitle  = lipgloss.NewStyle().Bold(true)
	tuiStatus = lipgloss.NewStyle().Reverse(true)
	tuiAsk    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("3"))
	tuiError  = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	tuiMuted  = lipgloss.NewStyle().Faint(true)
)

// statusLine is the run's status in one line.
func (t *tuiModel) statusLine() string {
	parts := []string{t.status}
	if t.maxIter > 0 {
		parts = append(parts, fmt.Sprintf("iteration %d/%d", t.iteration, t.maxIter))
	} else {
		parts = append(parts, fmt.Sprintf("iteration %d", t.iteration))
	}
	if t.goal != "" {
		parts = append(parts, "goal "+t.goal)
	}
	parts = append(parts, fmt.Sprintf("%d tokens", t.tokens))
	if t.model != "" {
		parts = append(parts, t.model)
	}
	return strings.Join(parts, " · ")
}

// View implements tea.Model.
func (t *tuiModel) View() tea.View {
	v := tea.NewView(t.screen())
	v.AltScreen = t.altScreen
	return v
}

// screen is the content of the UI's screen.
func (t *tuiModel) screen() string {
	w := max(t.width, 20)
	var b strings.Builder
	b.WriteString(tuiTitle.Render(clip(fmt.Sprintf("retrai · run %s · goal %s · model %s", t.run.ID, t.run.Goal, displayModel(t.run.Model)), w)))
	b.WriteString("\n")

	var footer []string
	footer = append(footer, tuiStatus.Render(clip(" "+t.statusLine()+" ", w)))
	if t.errText != "" {
		footer = append(footer, tuiError.Render(clip("! "+t.errText, w)))
	}
	switch {
	case t.waiting():
		footer = append(footer, tuiAsk.Render(clip("? "+t.question, w)), "[a] approve  [x] abort  [q] quit")
	case t.deciding:
		footer = append(footer, tuiMuted.Render("sending the decision…"))
	case t.ended:
		footer = append(footer, tuiMuted.Render("the run has ended · [q] quit"))
	default:
		footer = append(footer, tuiMuted.Render("[q] quit (the run is interrupted; resume it with retrai run --resume)"))
	}

	room := max(t.height-1-len(footer), 1)
	lines := t.lines
	if len(lines) > room {
		lines = lines[len(lines)-room:]
	}
	for _, l := range lines {
		b.WriteString(clip(l, w))
		b.WriteString("\n")
	}
	for range room - len(lines) {
		b.WriteString("\n")
	}
	b.WriteString(strings.Join(footer, "\n"))
	return b.String()
}

// isTerminalOutput reports whether w is a terminal.
func isTerminalOutput(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
