GO ?= go
# apt-get needs root; CI containers usually run as root and have no sudo.
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: deps deps-oracle-mysql vet tidy-check test demo bench-dashboard bench bench-smoke bench-check bench-build

# internal/testdb starts throwaway MariaDB and PostgreSQL servers, and a
# three-node MariaDB Galera cluster (galera-4's provider, rsync for the
# joiners' state transfer), from these binaries; it never uses a system
# service, so only the packages are needed.
# internal/browser drives Debian's chromium through chromium-driver; its tests
# fail, not skip, without them. apt-get update runs only if something is missing.
deps: deps-oracle-mysql
	@have_my=; have_pg=; pkgs=; \
	{ command -v mariadbd || [ -x /usr/sbin/mariadbd ]; } >/dev/null 2>&1 && \
	  { command -v mariadb-install-db || [ -x /usr/bin/mariadb-install-db ]; } >/dev/null 2>&1 && have_my=1; \
	{ command -v initdb && command -v pg_ctl; } >/dev/null 2>&1 && have_pg=1; \
	for d in /usr/lib/postgresql/*/bin; do \
	  [ -x "$$d/initdb" ] && [ -x "$$d/pg_ctl" ] && have_pg=1; \
	done; \
	if [ -z "$$have_my" ] || [ -z "$$have_pg" ]; then \
	  pkgs="mariadb-server postgresql"; \
	fi; \
	if [ ! -e /usr/lib/galera/libgalera_smm.so ] && [ ! -e /usr/lib/libgalera_smm.so ]; then \
	  pkgs="$$pkgs galera-4"; \
	fi; \
	command -v rsync >/dev/null 2>&1 || pkgs="$$pkgs rsync"; \
	if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  pkgs="$$pkgs chromium chromium-driver"; \
	fi; \
	if [ -n "$$pkgs" ]; then \
	  echo "installing" $$pkgs; \
	  $(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $$pkgs; \
	fi

# Oracle MySQL: Debian 12 has no package, and Debian unstable's
# mysql-server-core needs a newer C library than the host's, so internal/testdb
# runs it with chroot from a minimal Debian unstable userland built here once,
# outside the repository, and reused by every later run (a new machine builds
# it again). The mirror is the one the machine's own apt sources name.
ORACLE_MYSQL_ROOT ?= /var/cache/lockstep/mysql-sid

deps-oracle-mysql:
	@if [ ! -x "$(ORACLE_MYSQL_ROOT)/usr/sbin/mysqld" ]; then \
	  mirror=$$(grep -h -oE 'https?://[^ ]+/debian/?( |$$)' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1 | tr -d ' '); \
	  [ -n "$$mirror" ] || { echo "no Debian mirror in the apt sources: cannot build the Oracle MySQL userland"; exit 1; }; \
	  command -v debootstrap >/dev/null 2>&1 || { $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap; }; \
	  echo "building the Oracle MySQL userland in $(ORACLE_MYSQL_ROOT) (Debian unstable, mysql-server-core)"; \
	  $(SUDO) rm -rf "$(ORACLE_MYSQL_ROOT).new" && $(SUDO) mkdir -p "$$(dirname "$(ORACLE_MYSQL_ROOT)")" && \
	  $(SUDO) debootstrap --variant=minbase --include=mysql-server-core sid "$(ORACLE_MYSQL_ROOT).new" "$$mirror" >/dev/null && \
	  $(SUDO) rm -rf "$(ORACLE_MYSQL_ROOT)" && $(SUDO) mv "$(ORACLE_MYSQL_ROOT).new" "$(ORACLE_MYSQL_ROOT)"; \
	fi

vet:
	$(GO) vet ./...

# go mod tidy must leave every module (root, bench, otel) as committed: a dependency is chosen,
# not accreted, and an indirect mark on a direct import hides which it is.
tidy-check:
	@$(GO) mod tidy -diff >/dev/null 2>&1 || { echo "go mod tidy would change go.mod/go.sum:"; $(GO) mod tidy -diff; exit 1; }
	@cd bench && { $(GO) mod tidy -diff >/dev/null 2>&1 || { echo "go mod tidy would change bench/go.mod/go.sum:"; $(GO) mod tidy -diff; exit 1; }; }
	@cd otel && { $(GO) mod tidy -diff >/dev/null 2>&1 || { echo "go mod tidy would change otel/go.mod/go.sum:"; $(GO) mod tidy -diff; exit 1; }; }

test: deps tidy-check
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
	  echo "gofmt -l reports unformatted files:"; echo "$$unformatted"; exit 1; \
	fi
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 30m -skip Galera $$($(GO) list ./... | grep -v '/lab/lockorder$$')
	cd otel && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 10m ./...
	# The writer pairs interleave every pair of writers at every statement
	# (over 2,000 interleavings): a test of the servers' locks, run without
	# the race detector, which would slow it past any use.
	$(GO) test -count=1 -timeout 75m -skip Galera ./lab/lockorder/
	# The limits' load tests at full size (5,000 jobs per server), which
	# the race detector would slow past any use.
	$(GO) test -count=1 -timeout 15m -run '^TestLimit' .
	# The three-node Galera cluster's tests (the cluster itself, failover,
	# the conformance suite, the writer pairs through one node and across
	# two, the soaks with one writer node and three, a
	# node killed under the chaos harness), one package at a time and
	# without the race detector: a machine loaded by everything at once
	# starves the cluster's group communication, which then stalls for
	# reasons that are not lockstep's.
	$(GO) test -count=1 -p 1 -timeout 30m -run Galera ./internal/testdb/ ./driver/mysql/ ./lab/lockorder/ ./lab/soak/ ./lab/labcli/

demo:
	$(GO) run ./cmd/lockstep demo

# Each dashboard page against 1,000,000 jobs on throwaway MariaDB and
# PostgreSQL servers (docs/operate.md has the numbers).
bench-dashboard: deps
	$(GO) test -run '^$$' -bench BenchmarkPages -benchtime 20x ./dashboard/

# lockstep-bench (bench/, its own module) against throwaway durable MariaDB
# and PostgreSQL servers; BENCHMARKS.md has the results and the commands.
# `make bench` runs every subcommand at full size, one after another (never
# two at once: they share the machine), and writes each table to
# $(BENCH_OUT)/<subcommand>.md as well as stdout.
BENCH_OUT ?= bench/results
BENCH := bench/lockstep-bench

bench-build:
	cd bench && $(GO) build -o lockstep-bench ./cmd/lockstep-bench

bench: deps bench-build
	@mkdir -p $(BENCH_OUT)
	$(BENCH) throughput --floor > $(BENCH_OUT)/throughput.md
	@cat $(BENCH_OUT)/throughput.md
	$(BENCH) floor > $(BENCH_OUT)/floor.md
	@cat $(BENCH_OUT)/floor.md
	$(BENCH) depth > $(BENCH_OUT)/depth.md
	@cat $(BENCH_OUT)/depth.md
	$(BENCH) latency > $(BENCH_OUT)/latency.md
	@cat $(BENCH_OUT)/latency.md
	$(BENCH) topology > $(BENCH_OUT)/topology.md
	@cat $(BENCH_OUT)/topology.md
	$(BENCH) sweep --workers 10,100,1000 --systems lockstep-postgres,river-postgres,lockstep-mariadb,lockstep-mysql > $(BENCH_OUT)/sweep.md
	@cat $(BENCH_OUT)/sweep.md
	$(BENCH) throughput --systems lockstep-postgres,river-postgres,lockstep-mariadb,lockstep-mysql --mode continuous \
	  --reps 1 --duration 60s --warmup 5s --hold-snapshot 10m --hold-sample 5s --chart $(BENCH_OUT)/hold-snapshot.svg > $(BENCH_OUT)/hold-snapshot.md
	@cat $(BENCH_OUT)/hold-snapshot.md
	$(BENCH) retained --retained 10000000 > $(BENCH_OUT)/retained.md
	@cat $(BENCH_OUT)/retained.md
	LOCKSTEP_BENCH_RETAINED=9000000 $(GO) test -run '^$$' -bench BenchmarkPages -benchtime 10x -timeout 60m ./dashboard/ > $(BENCH_OUT)/dashboard.txt
	@cat $(BENCH_OUT)/dashboard.txt

# gofmt, vet and tests of the bench module: the root's `go vet ./...` does
# not descend into a nested module.
bench-check:
	@unformatted="$$(cd bench && gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
	  echo "gofmt -l reports unformatted files in bench/:"; echo "$$unformatted"; exit 1; \
	fi
	cd bench && $(GO) vet ./...
	cd bench && $(GO) test -count=1 -timeout 10m ./...

# Every subcommand with tiny sizes, so that the code cannot rot; the numbers
# mean nothing. CI runs it after `make test`.
bench-smoke: deps bench-check bench-build
	$(BENCH) --log-level warn throughput --jobs 2000 --reps 1 --duration 3s --warmup 1s --backlog 2000 \
	  --floor --floor-batches 100 --floor-concurrency 2 --floor-duration 1s --floor-warmup 200ms
	$(BENCH) --log-level warn throughput --systems lockstep-postgres,river-postgres,lockstep-mariadb --mode continuous \
	  --reps 1 --duration 2s --warmup 1s --backlog 2000 --complete-batch-wait 5ms \
	  --hold-snapshot 3s --hold-sample 1s --chart "$${TMPDIR:-/tmp}/lockstep-bench-smoke-hold.svg"
	$(BENCH) --log-level warn sweep --workers 5,20 --duration 1s --warmup 500ms --backlog 1000
	$(BENCH) --log-level warn floor --batch 10,100 --concurrency 1,2 --duration 1s --warmup 200ms
	$(BENCH) --log-level warn depth --depths 1000 --claims 20 --lock-samples 1
	$(BENCH) --log-level warn latency --rates 20,200 --duration 1s --tuned-min-poll 0
	$(BENCH) --log-level warn waiting --reps 1 --jobs 500 --waiting 2000
	$(BENCH) --log-level warn retained --systems lockstep-postgres,river-postgres,lockstep-mariadb,lockstep-mysql \
	  --retained 2000 --duration 1s --warmup 500ms --backlog 500
	$(BENCH) --log-level warn limits --reps 1 --jobs 500 --rate-jobs 300 --keys 100 --serial-jobs 500
	$(BENCH) --log-level warn topology --reps 1 --jobs 300
