package main

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
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
	// as they come, and the question with the buttons.
	run := ts.create(t, `{"goal":"shell","hitl":true}`)
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
