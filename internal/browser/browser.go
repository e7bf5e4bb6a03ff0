// Package browser drives a headless Chromium for end-to-end tests. It speaks
// the W3C WebDriver protocol to chromedriver over net/http, so tests need no
// third-party module, only Debian's chromium and chromium-driver packages
// (`make deps` installs them).
package browser

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockstep-queue/lockstep/internal/proc"
)

// Options configures Start. The zero value works on a Debian system with
// chromium and chromium-driver installed.
type Options struct {
	// ChromiumPath overrides the search for /usr/bin/chromium, then
	// chromium in PATH.
	ChromiumPath string
	// ChromedriverPath overrides the search for /usr/bin/chromedriver, then
	// chromedriver in PATH. It must match the Chromium version.
	ChromedriverPath string
	// TempDir is where the browser profile and the chromedriver log go,
	// typically t.TempDir(); "" means the system temp dir. Start creates a
	// fresh directory inside it and Close removes only that.
	TempDir string
	// Args are extra Chromium flags, appended to the defaults.
	Args []string
}

// defaultArgs keep Chromium headless and quiet: the test network is closed,
// and without these flags Chromium keeps trying to reach Google's services
// (and some of them stall page loads until they time out).
var defaultArgs = []string{
	"--headless=new",
	"--no-sandbox", // containers often run as root, where the sandbox refuses to start
	"--disable-gpu",
	"--disable-quic",
	"--no-first-run",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-dev-shm-usage", // /dev/shm is tiny in containers; Chromium crashes when it fills
	"--window-size=1280,900",
}

const (
	// startTimeout bounds Start when ctx has no earlier deadline, so that a
	// wedged chromedriver fails the test instead of hanging it.
	startTimeout = time.Minute
	// quitTimeout bounds Close's polite shutdown before it kills.
	quitTimeout = 10 * time.Second
	// pollInterval is how often readiness and WaitForText look again.
	pollInterval = 50 * time.Millisecond
)

// dirPrefix names the directories Start creates; with the pid that follows
// it, reapOrphans can tell which browsers have outlived their test binary.
const dirPrefix = "lockstep-browser-"

var reapOrphansOnce sync.Once

// Session is one Chromium controlled through its own chromedriver. Its
// methods may be called from several goroutines, but WebDriver executes one
// command at a time per session.
type Session struct {
	id     string
	base   string // chromedriver's URL, http://127.0.0.1:port
	client *http.Client
	proc   *proc.Process
	dir    string // created by Start, removed by Close

	closeOnce sync.Once
	closeErr  error
}

// Start launches chromedriver on a free loopback port and opens a session
// in a new headless Chromium with an empty profile. The caller must Close
// the session. ctx bounds the start only, not the session's lifetime.
func Start(ctx context.Context, opts Options) (*Session, error) {
	chromium, err := findBinary("chromium", opts.ChromiumPath)
	if err != nil {
		return nil, err
	}
	driver, err := findBinary("chromedriver", opts.ChromedriverPath)
	if err != nil {
		return nil, err
	}
	reapOrphansOnce.Do(reapOrphans)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	dir, err := proc.OwnedTempDir(opts.TempDir, dirPrefix, "")
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	profile := filepath.Join(dir, "profile")
	if err := os.Mkdir(profile, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("browser: %w", err)
	}
	s := &Session{
		dir: dir,
		client: &http.Client{Transport: &http.Transport{
			// chromedriver is on loopback; a proxy from the environment
			// could only get in the way.
			Proxy: nil,
		}},
	}
	logPath := filepath.Join(dir, "chromedriver.log")
	if err := s.startDriver(ctx, driver, logPath); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}

	args := append(append([]string{}, defaultArgs...), "--user-data-dir="+profile)
	args = append(args, opts.Args...)
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": chromium,
			"args":   args,
		},
		// Leave alerts open for AcceptAlert/DismissAlert instead of letting
		// the next command dismiss them behind the test's back.
		"unhandledPromptBehavior": "ignore",
	}}}
	offset := fileSize(logPath)
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err := s.call(ctx, http.MethodPost, "/session", caps, &created); err != nil {
		log := logSince(logPath, offset)
		s.proc.Stop(syscall.SIGKILL, 0)
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("browser: start %s: %w\nchromedriver output:\n%s", chromium, err, log)
	}
	s.id = created.SessionID
	return s, nil
}

// startDriver runs chromedriver and waits until its /status says it is ready.
func (s *Session) startDriver(ctx context.Context, path, logPath string) error {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return fmt.Errorf("browser: find a free port: %w", err)
		}
		// chromedriver's output and, through inheritance, Chromium's go to a
		// file: a pipe would make Wait block until every Chromium process
		// that inherited it has exited.
		logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("browser: %w", err)
		}
		offset := fileSize(logPath)
		cmd := exec.Command(path, "--port="+strconv.Itoa(port))
		cmd.Stdout, cmd.Stderr = logf, logf
		p, err := proc.Start(cmd, nil)
		logf.Close() // the child has its own descriptor
		if err != nil {
			return fmt.Errorf("browser: start %s: %w", path, err)
		}
		s.proc = p
		s.base = "http://127.0.0.1:" + strconv.Itoa(port)
		err = s.waitReady(ctx)
		if err == nil {
			return nil
		}
		p.Stop(syscall.SIGKILL, 0)
		log := logSince(logPath, offset)
		if p.Wait() != nil && strings.Contains(log, "Address already in use") && attempt < attempts {
			continue // someone took the port between freePort and bind
		}
		return fmt.Errorf("browser: start %s: %w\nchromedriver output:\n%s", path, err, log)
	}
}

func (s *Session) waitReady(ctx context.Context) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var lastErr error
	for {
		var status struct {
			Ready   bool   `json:"ready"`
			Message string `json:"message"`
		}
		lastErr = s.call(ctx, http.MethodGet, "/status", nil, &status)
		// A chromedriver that lost the race for the port exits at once;
		// whoever won it must not be mistaken for ours.
		if lastErr == nil && status.Ready && !s.proc.HasExited() {
			return nil
		}
		if lastErr == nil {
			lastErr = fmt.Errorf("not ready: %s", status.Message)
		}
		select {
		case <-s.proc.Exited():
			return fmt.Errorf("chromedriver exited before it was ready: %v", s.proc.Wait())
		case <-ctx.Done():
			return fmt.Errorf("chromedriver not ready: %w (last status: %v)", ctx.Err(), lastErr)
		case <-tick.C:
		}
	}
}

// findBinary returns override if set, else /usr/bin/name, else name in PATH.
func findBinary(name, override string) (string, error) {
	hint := "install Debian's chromium and chromium-driver packages (`make deps` does it)"
	if override != "" {
		if !isExecutable(override) {
			return "", fmt.Errorf("browser: %s %s is not an executable file; %s", name, override, hint)
		}
		return override, nil
	}
	if p := filepath.Join("/usr/bin", name); isExecutable(p) {
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("browser: %s not found in /usr/bin or PATH; %s", name, hint)
}

// Close ends the session, stops chromedriver and its Chromium, and removes
// the directory Start created. It is safe to call more than once.
func (s *Session) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Session) close() error {
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), quitTimeout)
	defer cancel()
	// Deleting the session makes chromedriver quit Chromium and wait for
	// it, so that nothing writes into the profile while it is removed.
	if err := s.call(ctx, http.MethodDelete, s.path(""), nil, nil); err != nil {
		errs = append(errs, fmt.Errorf("browser: delete session: %w", err))
		// Chromium may still run, in chromedriver's process group even if
		// chromedriver itself died.
		_ = s.proc.SignalGroup(syscall.SIGKILL)
	} else {
		// A chromedriver killed right after the delete sometimes leaves a
		// scoped_dir in /tmp behind; asked to shut down, it removes it.
		_ = s.call(ctx, http.MethodGet, "/shutdown", nil, nil)
		select {
		case <-s.proc.Exited():
		case <-ctx.Done():
		}
	}
	s.proc.Stop(syscall.SIGKILL, 0)
	s.client.CloseIdleConnections()
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("browser: %w", err))
	}
	return errors.Join(errs...)
}
