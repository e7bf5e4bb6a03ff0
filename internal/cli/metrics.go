package cli

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep-queue/lockstep/metrics"
)

// newMetrics builds the registry a process serves on /metrics: lockstep's
// collectors, the database pool's stats, and the Go and process
// collectors.
func (c *app) newMetrics(db *sql.DB) (*prometheus.Registry, *metrics.Metrics, error) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{Logger: c.Logger})
	if err != nil {
		return nil, nil, err
	}
	if err := m.RegisterDB(reg, "lockstep", db); err != nil {
		return nil, nil, err
	}
	if err := errors.Join(
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
	); err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	return reg, m, nil
}

// metricsHandler serves a registry in the Prometheus text format.
func (c *app) metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(c.Logger.Handler(), slog.LevelWarn)})
}

// newHTTPServer is an http.Server with every timeout set, logging through
// slog.
func (c *app) newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(c.Logger.Handler(), slog.LevelWarn),
	}
}

// serveWorkerMetrics serves /metrics and /healthz for `lockstep work` on
// addr until ctx ends. Off loopback it needs a token, checked as a bearer
// token in constant time; metrics name queues and kinds, which are nobody
// else's business.
func (c *app) serveWorkerMetrics(ctx context.Context, addr, token string, reg *prometheus.Registry, db *sql.DB) (stop func(), err error) {
	loopback, err := loopbackAddr(addr)
	if err != nil {
		return nil, err
	}
	if !loopback && token == "" {
		return nil, fmt.Errorf("refusing to serve metrics on %s without a token: set $LOCKSTEP_TOKEN, or listen on a loopback address such as 127.0.0.1:9090", addr)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", bearer(token, c.metricsHandler(reg)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		pctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := db.PingContext(pctx); err != nil {
			c.Logger.Warn("healthz: database unreachable", "err", err)
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	srv := c.newHTTPServer(mux)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.Logger.Error("metrics server stopped", "err", err)
		}
	}()
	c.Logger.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics", "auth", token != "")
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
		<-done
	}, nil
}

// bearer requires "Authorization: Bearer <token>" when token is set.
func bearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lockstep"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
