package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvGaleraDSNs names the nodes of an existing Galera cluster to use
// instead of starting one: go-sql-driver/mysql DSNs with rights to create
// databases, separated by commas, one per node.
const EnvGaleraDSNs = "LOCKSTEP_TEST_GALERA_DSNS"

// GaleraNodes is how many nodes the cluster tests start has: the smallest
// that keeps a quorum with one node down.
const GaleraNodes = 3

// galeraProviders are where Debian's galera-4 installs the wsrep provider.
var galeraProviders = []string{"/usr/lib/galera/libgalera_smm.so", "/usr/lib/libgalera_smm.so", "/usr/lib64/galera-4/libgalera_smm.so"}

// Galera returns one DSN per node of a shared three-node MariaDB Galera
// cluster, all for the same new, empty database, created through the
// first node and present on every node before Galera returns; it is
// dropped when t ends. The cluster is shared by the whole test binary; a
// test that kills nodes starts a cluster of its own (StartGaleraCluster).
func Galera(t testing.TB) []string {
	t.Helper()
	c := galeraCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	dsns, err := c.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
		defer cancel()
		if err := c.DropDatabase(ctx, dsns[0]); err != nil {
			t.Logf("%v", err)
		}
	})
	return dsns
}

// GaleraAdminDSNs returns a DSN with root rights and no database for each
// node of the cluster Galera uses, for the server-wide counters.
func GaleraAdminDSNs(t testing.TB) []string {
	t.Helper()
	return galeraCluster(t).AdminDSNs()
}

func galeraCluster(t testing.TB) *Cluster {
	t.Helper()
	if !registry.inMain.Load() {
		t.Fatalf("testdb: servers are only stopped by testdb.Main; add func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) } to this test package")
	}
	l := &registry.galera
	l.once.Do(func() {
		l.c, l.err = StartGaleraCluster(context.Background(), ServerOptions{
			ExternalDSN: os.Getenv(EnvGaleraDSNs), ExternalDSNSource: EnvGaleraDSNs, Logf: t.Logf,
		})
	})
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.c
}

// lazyCluster starts the shared cluster on first use, as lazyServer does
// a server.
type lazyCluster struct {
	once sync.Once
	c    *Cluster
	err  error
}

// Cluster is a MariaDB Galera cluster: every node a Server of its own on
// loopback ports, with its own data directory, which Stop, Kill and Start
// control one by one. A node started again rejoins the cluster (by an
// incremental state transfer from another node's cache, or a full one).
type Cluster struct {
	nodes   []*Server
	started bool
	dir     string // the cluster's directory, removed by Close

	mu      sync.Mutex
	created []string
}

// StartGaleraCluster starts a throwaway three-node Galera cluster of
// MariaDB servers (Debian's mariadb-server and galera-4), or connects to
// the comma-separated DSNs of opts.ExternalDSN. The first node bootstraps
// the cluster; the others join it one at a time by a full state transfer
// (rsync) and the call returns once every node is Synced.
func StartGaleraCluster(ctx context.Context, opts ServerOptions) (*Cluster, error) {
	if opts.ExternalDSN != "" {
		return externalGalera(ctx, opts)
	}
	removeStale()
	hint := "`make deps` installs mariadb-server and galera-4 (or set " + EnvGaleraDSNs + " to use an existing cluster)"
	mariadbd, ok := lookBinary([]string{"mariadbd", "mysqld"}, []string{"/usr/sbin", "/usr/local/sbin"})
	if !ok {
		return nil, errors.New("testdb: cannot start a Galera cluster: mariadbd not found; " + hint)
	}
	installDB, ok := lookBinary([]string{"mariadb-install-db", "mysql_install_db"}, []string{"/usr/bin", "/usr/local/bin"})
	if !ok {
		return nil, errors.New("testdb: cannot start a Galera cluster: mariadb-install-db not found; " + hint)
	}
	provider := ""
	for _, p := range galeraProviders {
		if isExecutable(p) || fileSize(p) > 0 {
			provider = p
			break
		}
	}
	if provider == "" {
		return nil, errors.New("testdb: cannot start a Galera cluster: the wsrep provider libgalera_smm.so is not installed; " + hint)
	}
	if _, err := exec.LookPath("rsync"); err != nil {
		return nil, errors.New("testdb: cannot start a Galera cluster: rsync (the state transfer) is not installed; " + hint)
	}
	cred, err := galeraCredential()
	if err != nil {
		return nil, fmt.Errorf("testdb: cannot start a Galera cluster: %v", err)
	}
	var lastErr error
	for range startAttempts {
		begin := time.Now()
		c, err := launchGalera(ctx, mariadbd, installDB, provider, cred, opts)
		if err == nil {
			opts.logf("testdb: Galera cluster of %d nodes synced in %v (%s settings)", GaleraNodes,
				time.Since(begin).Round(time.Millisecond), settingsName(opts.Durable))
			return c, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	return nil, fmt.Errorf("testdb: cannot start a Galera cluster: %v", lastErr)
}

// galeraCredential is whom the nodes run as. As root, not root: a joiner
// receives its state through an rsync daemon, and rsync run as root drops
// to user nobody, who cannot write the data directory (the transfer then
// fails with "errors selecting input/output files"). So as root the nodes
// run as the mysql user that mariadb-server creates, which also keeps the
// parent-death signal (mariadbd's own --user would drop it).
func galeraCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		return nil, errors.New("running as root, the nodes must run as user mysql (created by mariadb-server), which does not exist")
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, fmt.Errorf("user mysql has uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// galeraPorts are one node's ports: SQL, group communication, incremental
// and full state transfer.
type galeraPorts struct{ sql, group, ist, sst int }

func launchGalera(ctx context.Context, mariadbd, installDB, provider string, cred *syscall.Credential, opts ServerOptions) (*Cluster, error) {
	dir, err := makeTempDir("galera")
	if err != nil {
		return nil, err
	}
	c := &Cluster{started: true, dir: dir}
	fail := func(err error) (*Cluster, error) {
		_ = c.closeNodes()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// The nodes' users must reach their directories.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	ports := make([]galeraPorts, GaleraNodes)
	var members []string
	for i := range ports {
		p := make([]int, 4)
		for j := range p {
			if p[j], err = freePort(); err != nil {
				return fail(err)
			}
		}
		ports[i] = galeraPorts{p[0], p[1], p[2], p[3]}
		members = append(members, fmt.Sprintf("127.0.0.1:%d", p[1]))
	}
	for i := range GaleraNodes {
		nodeDir := filepath.Join(dir, fmt.Sprintf("node%d", i+1))
		for _, d := range []string{nodeDir, filepath.Join(nodeDir, "data"), filepath.Join(nodeDir, "tmp")} {
			if err := os.Mkdir(d, 0o755); err != nil {
				return fail(err)
			}
		}
		if cred != nil {
			if err := chownTree(nodeDir, cred); err != nil {
				return fail(err)
			}
		}
		if i == 0 {
			if err := installGalera(ctx, installDB, nodeDir, cred); err != nil {
				return fail(err)
			}
		}
		args := galeraArgs(nodeDir, provider, i, ports[i], members, opts.Durable)
		first := args
		if i == 0 {
			first = append(append([]string(nil), args...), "--wsrep-new-cluster")
		}
		errorLog := filepath.Join(nodeDir, "error.log")
		launched := false
		newCmd := func() *exec.Cmd {
			// Only the very first start bootstraps: a node started again
			// joins the cluster the others still form.
			a := args
			if !launched {
				a, launched = first, true
			}
			return exec.Command(mariadbd, a...)
		}
		s, err := runMySQLCommand(nodeDir, newCmd, cred, ports[i].sql, errorLog)
		if err != nil {
			return fail(fmt.Errorf("node %d: %v\n%s", i+1, err, logTail(errorLog)))
		}
		c.nodes = append(c.nodes, &Server{s: s, started: true, versionQuery: "SELECT VERSION()", source: "StartGaleraCluster"})
		if err := c.WaitSynced(ctx, i); err != nil {
			return fail(fmt.Errorf("node %d: %v\n%s", i+1, err, logTail(errorLog)))
		}
	}
	return c, nil
}

// installGalera initialises the first node's data directory; the others
// receive theirs from it when they join.
func installGalera(ctx context.Context, installDB, nodeDir string, cred *syscall.Credential) error {
	args := []string{
		"--no-defaults",
		"--datadir=" + filepath.Join(nodeDir, "data"),
		"--tmpdir=" + filepath.Join(nodeDir, "tmp"),
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
		"--innodb-use-native-aio=0",
	}
	if cred != nil {
		args = append(args, "--user=mysql")
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	install := exec.CommandContext(ctx, installDB, args...)
	install.Dir = nodeDir
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", installDB, err, tailString(string(out)))
	}
	return nil
}

func chownTree(root string, cred *syscall.Credential) error {
	return filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(cred.Uid), int(cred.Gid))
	})
}

// galeraArgs are node i's options: a MariaDB server as the tests run one,
// with wsrep on and every Galera port on the loopback interface.
func galeraArgs(nodeDir, provider string, i int, p galeraPorts, members []string, durable bool) []string {
	args := mariadbArgs(nodeDir, filepath.Join(nodeDir, "data"), filepath.Join(nodeDir, "tmp"),
		filepath.Join(nodeDir, "error.log"), p.sql)
	args = append(args, mysqlSettings(durable)...)
	return append(args,
		// Galera replicates row events and needs interleaved
		// auto-increment locking.
		"--binlog-format=ROW",
		"--innodb-autoinc-lock-mode=2",
		"--wsrep-on=ON",
		"--wsrep-provider="+provider,
		"--wsrep-cluster-name=lockstep-test",
		"--wsrep-cluster-address=gcomm://"+strings.Join(members, ","),
		fmt.Sprintf("--wsrep-node-name=node%d", i+1),
		fmt.Sprintf("--wsrep-node-address=127.0.0.1:%d", p.group),
		fmt.Sprintf("--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:%d;ist.recv_addr=127.0.0.1:%d;gcache.size=64M",
			p.group, p.ist),
		fmt.Sprintf("--wsrep-sst-receive-address=127.0.0.1:%d", p.sst),
		"--wsrep-sst-method=rsync",
		// Certification failures are logged, so a test can tell them
		// from local deadlocks.
		"--wsrep-log-conflicts=ON",
	)
}

func externalGalera(ctx context.Context, opts ServerOptions) (*Cluster, error) {
	c := &Cluster{}
	for _, dsn := range strings.Split(opts.ExternalDSN, ",") {
		s, err := startStandalone(ctx, ServerOptions{ExternalDSN: strings.TrimSpace(dsn), ExternalDSNSource: opts.source()},
			startMySQLServer, "SELECT VERSION()")
		if err != nil {
			_ = c.closeNodes()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
	}
	if len(c.nodes) < 2 {
		_ = c.closeNodes()
		return nil, fmt.Errorf("testdb: %s names %d node; a cluster test needs at least 2", opts.source(), len(c.nodes))
	}
	return c, nil
}

// Nodes is how many nodes the cluster has.
func (c *Cluster) Nodes() int { return len(c.nodes) }

// Node returns node i (from 0), to Stop, Kill or Start it.
func (c *Cluster) Node(i int) *Server { return c.nodes[i] }

// AdminDSNs returns a root DSN without a database for every node.
func (c *Cluster) AdminDSNs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.AdminDSN()
	}
	return out
}

// NewDatabase creates a new, empty database through the first node and
// returns a DSN for it on every node, once every node has it.
func (c *Cluster) NewDatabase(ctx context.Context) ([]string, error) {
	name := "lst_" + randomHex(8)
	first := c.nodes[0].s
	if err := first.create(ctx, name); err != nil {
		return nil, fmt.Errorf("testdb: creating database %s on the Galera cluster: %v", name, err)
	}
	c.mu.Lock()
	c.created = append(c.created, name)
	c.mu.Unlock()
	dsns := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		dsns[i] = n.s.dsn(name)
		if err := waitFor(ctx, func() (bool, error) {
			var got string
			err := n.s.admin.QueryRowContext(ctx,
				"SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&got)
			if errors.Is(err, sql.ErrNoRows) {
				return false, nil
			}
			return err == nil, err
		}); err != nil {
			return nil, fmt.Errorf("testdb: database %s did not reach node %d: %v", name, i+1, err)
		}
	}
	return dsns, nil
}

// DropDatabase drops a database NewDatabase created (dsn is any of its
// node DSNs' first), through the first running node.
func (c *Cluster) DropDatabase(ctx context.Context, dsn string) error {
	var name string
	c.mu.Lock()
	for i, n := range c.created {
		if c.nodes[0].s.dsn(n) == dsn {
			name = n
			c.created = append(c.created[:i], c.created[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	if name == "" {
		return fmt.Errorf("testdb: %s was not created by NewDatabase", dsn)
	}
	var errs []error
	for _, n := range c.nodes {
		err := n.s.drop(ctx, name)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("testdb: dropping database %s on the Galera cluster: %v", name, errors.Join(errs...))
}

// State returns node i's wsrep_local_state_comment (Synced, Donor/Desynced,
// Joining, …) and whether it says it is ready for queries (wsrep_ready).
func (c *Cluster) State(ctx context.Context, i int) (state string, ready bool, err error) {
	rows, err := c.nodes[i].s.admin.QueryContext(ctx,
		"SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_ready')")
	if err != nil {
		return "", false, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return "", false, err
		}
		switch strings.ToLower(k) {
		case "wsrep_local_state_comment":
			state = v
		case "wsrep_ready":
			ready = v == "ON"
		}
	}
	return state, ready, rows.Err()
}

// WaitSynced waits until node i is Synced and ready for queries.
func (c *Cluster) WaitSynced(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeoutCause(ctx, readyTimeout, fmt.Errorf("%v passed", readyTimeout))
	defer cancel()
	return waitFor(ctx, func() (bool, error) {
		state, ready, err := c.State(ctx, i)
		return err == nil && state == "Synced" && ready, err
	})
}

// ClusterSize is the number of members node i sees (wsrep_cluster_size).
func (c *Cluster) ClusterSize(ctx context.Context, i int) (int, error) {
	var k string
	var size int
	err := c.nodes[i].s.admin.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'").Scan(&k, &size)
	return size, err
}

// StartNode starts node i again after Stop or Kill and waits until it has
// rejoined the cluster and is Synced.
func (c *Cluster) StartNode(ctx context.Context, i int) error {
	if err := c.nodes[i].Start(ctx); err != nil {
		return err
	}
	return c.WaitSynced(ctx, i)
}

// Close stops every node and removes the cluster's directory (on an
// external cluster: drops the databases NewDatabase created).
func (c *Cluster) Close() error {
	c.mu.Lock()
	created := c.created
	c.created = nil
	c.mu.Unlock()
	var errs []error
	if !c.started {
		for _, name := range created {
			ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
			if err := c.nodes[0].s.drop(ctx, name); err != nil {
				errs = append(errs, err)
			}
			cancel()
		}
	}
	errs = append(errs, c.closeNodes())
	if c.dir != "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}

func (c *Cluster) closeNodes() error {
	var errs []error
	for _, n := range c.nodes {
		n.s.dir = "" // the cluster's directory is removed as a whole
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}

// waitFor polls done every 50 ms until it reports true, returns an error
// that is not a miss, or ctx ends.
func waitFor(ctx context.Context, done func() (bool, error)) error {
	var last error
	for {
		ok, err := done()
		if ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%v (last: %v)", context.Cause(ctx), last)
			}
			return context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// GaleraCounters is what one Galera node has counted since it started: its
// InnoDB deadlocks, its local transactions that failed certification at
// COMMIT (a write another node committed first), and those it aborted to
// apply another node's writes.
type GaleraCounters struct {
	Deadlocks, CertFailures, BFAborts int64
}

// Sub is c less an earlier reading.
func (c GaleraCounters) Sub(before GaleraCounters) GaleraCounters {
	return GaleraCounters{c.Deadlocks - before.Deadlocks, c.CertFailures - before.CertFailures, c.BFAborts - before.BFAborts}
}

func (c GaleraCounters) String() string {
	return fmt.Sprintf("deadlocks %d, certification failures %d, brute-force aborts %d", c.Deadlocks, c.CertFailures, c.BFAborts)
}

// Counters reads every node's counters, in node order, through the
// nodes' admin pools.
func (c *Cluster) Counters(ctx context.Context) ([]GaleraCounters, error) {
	out := make([]GaleraCounters, len(c.nodes))
	for i, n := range c.nodes {
		if err := readCounters(ctx, n.s.admin, &out[i]); err != nil {
			return nil, fmt.Errorf("testdb: reading Galera node %d's counters: %v", i+1, err)
		}
	}
	return out, nil
}

// readCounters reads one node's counters into out.
func readCounters(ctx context.Context, admin *sql.DB, out *GaleraCounters) error {
	rows, err := admin.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_deadlocks', 'wsrep_local_cert_failures', 'wsrep_local_bf_aborts')")
	if err != nil {
		return err
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("status %s is %q, not a count", k, v)
		}
		seen++
		switch strings.ToLower(k) {
		case "innodb_deadlocks":
			out.Deadlocks = n
		case "wsrep_local_cert_failures":
			out.CertFailures = n
		case "wsrep_local_bf_aborts":
			out.BFAborts = n
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if seen != 3 {
		return fmt.Errorf("the node reported %d of its 3 counters: not a Galera node?", seen)
	}
	return nil
}

// WatchGaleraCounters reads the counters of every node of the cluster
// Galera uses now, and returns what reads them again and gives each node's
// counts since.
func WatchGaleraCounters(t testing.TB) func() []GaleraCounters {
	t.Helper()
	c := galeraCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	before, err := c.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return func() []GaleraCounters {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		defer cancel()
		after, err := c.Counters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range after {
			after[i] = after[i].Sub(before[i])
		}
		return after
	}
}
