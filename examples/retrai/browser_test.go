package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
	"github.com/agentgraph/agentgraph/llm"
)

// TestDashboardInABrowser drives the dashboard in headless Chromium: the
// page lists the runs, follows a run's events live and answers its human
// check.
func TestDashboardInABrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skipf("skipping the browser test: chromium is not installed (%v); CI installs Debian's chromium (apt-get install chromium)", err)
	}
	ts := newTestServer(t)

	// A run that has ended before the page opens.
	done := ts.create(t, `{"goal":"shell"}`)
	c := ts.follow(t, done.ID, false)
	readUntil(t, c, done.ID, "runs.ended")
	requireClosed(t, c, websocket.StatusNormalClosure)

	// Generous: a loaded CI machine starts Chromium slowly. Nothing below
	// measures durations.
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	// What the page writes to its console is shown if the test fails.
	var (
		consoleMu    sync.Mutex
		consoleLines []string
		consoleDone  = make(chan struct{})
	)
	console := chromedp.Console(browser)
	go func() {
		defer close(consoleDone)
		for m, err := range console {
			if err != nil {
				return
			}
			consoleMu.Lock()
			consoleLines = append(consoleLines, m.String())
			consoleMu.Unlock()
		}
	}()
	defer func() {
		cancelBrowser()
		<-consoleDone
		if t.Failed() {
			for _, l := range consoleLines {
				t.Logf("browser console: %s", l)
			}
		}
	}()

	// The page loads and lists the runs.
	row := func(id string) chromedp.CSS { return chromedp.CSS(`#runs tr.run[data-run-id="` + id + `"]`) }
	require.NoError(t, chromedp.Do(browser,
		chromedp.Navigate(ts.URL+"/?token="+ts.token),
		chromedp.WaitVisible(row(done.ID)),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr.run[data-run-id="`+done.ID+`"][data-status="achieved"]`)),
	))
	title, err := chromedp.Run(browser, chromedp.Title())
	require.NoError(t, err)
	require.Equal(t, "retrai", title)
	status, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(`#runs tr.run[data-run-id="`+done.ID+`"] td.status`)))
	require.NoError(t, err)
	require.Equal(t, "achieved", strings.TrimSpace(status))

	// A run that waits for a human: the page lists it, shows its events
	// as they come, and the question with the buttons. Its model (an
	// OpenAI-compatible server) makes a wrong fix first, so that the first
	// check has a change to show, and the right one after. The log is
	// made short, so that the run's events overflow it.
	model := newFakeOpenAI(t, []llm.Reply{
		{Text: "I'll fix the typo.", ToolCalls: []llms.ToolCall{toolCall("call_1", "file_patch", `{"path":"greeting.txt","old_text":"Wrold","new_text":"Wordl"}`)}},
		{Text: "Still wrong; fixing it again.", ToolCalls: []llms.ToolCall{toolCall("call_2", "file_patch", `{"path":"greeting.txt","old_text":"Wordl","new_text":"World"}`)}},
	})
	project := t.TempDir()
	require.NoError(t, samples.Copy(samples.Shell, project))
	require.NoError(t, chromedp.Do(browser, chromedp.Evaluate[chromedp.Void](`document.querySelector('#events').style.height = '100px'`)))
	body, err := json.Marshal(map[string]any{"goal": "shell", "hitl": true, "cwd": project, "model": model.spec("")})
	require.NoError(t, err)
	run := ts.create(t, string(body))
	require.NoError(t, chromedp.Do(browser,
		chromedp.WaitVisible(row(run.ID)),
		chromedp.Click(row(run.ID)),
		chromedp.WaitVisible(chromedp.CSS(`#events li.event[data-kind="tool_result"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#events li.event[data-kind="retrai.human_check"]`)),
		chromedp.WaitVisible(chromedp.ID("approve")),
	))
	runTitle, err := chromedp.Run(browser, chromedp.Text(chromedp.ID("run-title")))
	require.NoError(t, err)
	require.Contains(t, runTitle, run.ID)
	question, err := chromedp.Run(browser, chromedp.Text(chromedp.ID("question")))
	require.NoError(t, err)
	require.Contains(t, question, "Iteration 1 of 10 done")
	var waiting runs.Run
	ts.api(t, "GET", "/api/runs/"+run.ID, "", http.StatusOK, &waiting)
	require.Equal(t, runs.StatusWaiting, waiting.Status)

	// At the check: the agent's change to the project, as a colored
	// unified diff of its file, and the graph with human_check lit and
	// the path that led there.
	require.NoError(t, chromedp.Do(browser,
		chromedp.WaitVisible(chromedp.CSS(`#changes details.file[data-path="greeting.txt"][data-status="modified"] pre.diff span.del`)),
		chromedp.WaitVisible(chromedp.CSS(`#changes details.file[data-path="greeting.txt"] pre.diff span.add`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph g.node.current[data-node="human_check"]`)),
	))
	removed, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(`#changes pre.diff span.del`)))
	require.NoError(t, err)
	require.Equal(t, "-Hello, Wrold!", removed)
	added, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(`#changes pre.diff span.add`)))
	require.NoError(t, err)
	require.Equal(t, "+Hello, Wordl!", added)
	summary, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(`#changes .summary`)))
	require.NoError(t, err)
	require.Equal(t, "1 file changed since the run started:", summary)
	colors, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#changes pre.diff span.del, #changes pre.diff span.add')].map((e) => getComputedStyle(e).backgroundColor)`))
	require.NoError(t, err)
	require.Equal(t, []string{"rgb(255, 235, 233)", "rgb(230, 255, 236)"}, colors, "deleted lines red, added lines green")
	lit, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#graph g.node.current')].map((g) => g.dataset.node)`))
	require.NoError(t, err)
	require.Equal(t, []string{"human_check"}, lit, "one node lit: the one that asks")
	taken, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#graph g.edge.taken')].map((g) => g.dataset.from + '>' + g.dataset.to).sort()`))
	require.NoError(t, err)
	require.Equal(t, []string{"__start__>plan", "act>evaluate", "evaluate>human_check", "plan>act"}, taken)

	// The log followed the run's events to the newest.
	type logBox struct{ Top, Height, Scroll float64 }
	readLog := func() logBox {
		box, err := chromedp.Run(browser, chromedp.Evaluate[logBox](`(() => { const l = document.querySelector('#events'); return {Top: l.scrollTop, Height: l.clientHeight, Scroll: l.scrollHeight}; })()`))
		require.NoError(t, err)
		return box
	}
	box := readLog()
	require.Greater(t, box.Scroll, box.Height, "the events overflow the log")
	require.GreaterOrEqual(t, box.Top+box.Height, box.Scroll-4, "the log shows the newest event")

	// The screenshot of the page at the check (the log at its usual
	// height), where RETRAI_SCREENSHOT says or in the test's directory.
	require.NoError(t, chromedp.Do(browser, chromedp.Evaluate[chromedp.Void](`document.querySelector('#events').style.height = ''`)))
	shot, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shotPath := os.Getenv("RETRAI_SCREENSHOT")
	if shotPath == "" {
		shotPath = filepath.Join(t.TempDir(), "dashboard-human-check.png")
	}
	require.NoError(t, os.WriteFile(shotPath, shot, 0o644))
	t.Logf("screenshot of the dashboard at a human check: %s", shotPath)

	// The user scrolls the log up: the events that come next do not move
	// it, and a button offers the newest.
	require.NoError(t, chromedp.Do(browser, chromedp.Evaluate[chromedp.Void](`(() => { const l = document.querySelector('#events'); l.style.height = '100px'; l.scrollTop = 0; })()`)))
	require.NoError(t, chromedp.Do(browser, chromedp.Poll[chromedp.Void](`document.querySelector('#events').scrollTop === 0 && !following`)))

	// Approve: the rest of the run comes live, to its end.
	require.NoError(t, chromedp.Do(browser,
		chromedp.Click(chromedp.ID("approve")),
		chromedp.WaitVisible(chromedp.CSS(`#events li.event.live[data-kind="retrai.human_decision"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#events li.event.live[data-kind="runs.ended"]`)),
		chromedp.WaitNotVisible(chromedp.ID("human")),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="achieved"]`)),
	))
	response, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(`#events li.event[data-kind="retrai.human_decision"]`)))
	require.NoError(t, err)
	require.Contains(t, response, "human: approved, going on")
	require.Zero(t, readLog().Top, "the log stays where the user scrolled it")
	require.NoError(t, chromedp.Do(browser,
		chromedp.WaitVisible(chromedp.ID("follow")),
		chromedp.Click(chromedp.ID("follow")),
		chromedp.WaitNotVisible(chromedp.ID("follow")),
	))
	box = readLog()
	require.GreaterOrEqual(t, box.Top+box.Height, box.Scroll-4, "following again: the log shows the newest event")
	// The run ended: the graph's path goes to the end, lit.
	require.NoError(t, chromedp.Do(browser, chromedp.WaitVisible(chromedp.CSS(`#graph g.node.current[data-node="__end__"]`))))

	// The API agrees: the run resumed and achieved its goal.
	var final runs.Run
	for range 600 {
		ts.api(t, "GET", "/api/runs/"+run.ID, "", http.StatusOK, &final)
		if final.Status != runs.StatusRunning && final.Status != runs.StatusWaiting {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, runs.StatusAchieved, final.Status)
	require.Equal(t, 2, final.Iteration)

	// The list shows it too.
	require.NoError(t, chromedp.Do(browser,
		chromedp.WaitVisible(chromedp.CSS(`#runs tr.run[data-run-id="`+run.ID+`"][data-status="achieved"]`)),
	))
	msg, err := chromedp.Run(browser, chromedp.Text(chromedp.ID("message")))
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(msg))

	// An interrupted run: the page offers to resume it, and resumes it to
	// its end.
	stopped := ts.interruptedRun(t)
	require.NoError(t, chromedp.Do(browser,
		chromedp.WaitVisible(chromedp.CSS(`#runs tr.run[data-run-id="`+stopped.ID+`"][data-status="interrupted"]`)),
		chromedp.Click(row(stopped.ID)),
		chromedp.WaitVisible(chromedp.ID("resume-run")),
		chromedp.Click(chromedp.ID("resume-run")),
		chromedp.WaitVisible(chromedp.CSS(`#events li.event.live[data-kind="runs.ended"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="achieved"]`)),
		chromedp.WaitNotVisible(chromedp.ID("resume")),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr.run[data-run-id="`+stopped.ID+`"][data-status="achieved"]`)),
	))
	msg, err = chromedp.Run(browser, chromedp.Text(chromedp.ID("message")))
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(msg))
}
