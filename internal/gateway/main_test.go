package gateway

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// pgBin is Debian's postgresql-15 (scripts/test installs it).
const pgBin = "/usr/lib/postgresql/15/bin"

// cluster is the test binary's one throwaway PostgreSQL, started in
// TestMain and stopped when the tests end; each test gets its own
// database in it. pgErr says why there is none.
var cluster struct {
	dir, sock string
	pgErr     string
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childServe())
	}
	stop := startCluster()
	code := m.Run()
	stop()
	os.Exit(code)
}

// startCluster makes a cluster with initdb under a short temp dir (a
// unix socket path has ~100 bytes) and starts it on that socket only. As
// root, PostgreSQL refuses to run: the cluster belongs to forkbomb-ci.
func startCluster() (stop func()) {
	noop := func() {}
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		cluster.pgErr = "postgresql-15 not installed (scripts/test installs it)"
		return noop
	}
	dir, err := os.MkdirTemp("", "fbpg")
	if err != nil {
		cluster.pgErr = err.Error()
		return noop
	}
	var wrap []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("forkbomb-ci")
		if err != nil {
			os.RemoveAll(dir)
			cluster.pgErr = "running as root and no forkbomb-ci user to run PostgreSQL as"
			return noop
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		os.Chown(dir, uid, gid)
		wrap = []string{"runuser", "-u", "forkbomb-ci", "--"}
	}
	run := func(args ...string) error {
		argv := append(append([]string{}, wrap...), args...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", args[0], err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run(filepath.Join(pgBin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		cluster.pgErr = err.Error()
		return noop
	}
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -F -c max_connections=300 -c shared_buffers=32MB", dir)
	if err := run(filepath.Join(pgBin, "pg_ctl"), "-D", data, "-o", opts, "-w", "-t", "60", "-l", filepath.Join(dir, "log"), "start"); err != nil {
		os.RemoveAll(dir)
		cluster.pgErr = err.Error()
		return noop
	}
	cluster.dir, cluster.sock = dir, dir
	return func() {
		run(filepath.Join(pgBin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop")
		os.RemoveAll(dir)
	}
}

// backends are the databases every ledger test runs on.
var backends = []string{"sqlite", "postgres"}

// newDSN makes an empty database of kind for t and returns its DSN.
func newDSN(t testing.TB, kind string) string {
	t.Helper()
	if kind == "sqlite" {
		return filepath.Join(t.TempDir(), "gateway.db")
	}
	if cluster.pgErr != "" {
		testutil.SkipOrFail(t, "no PostgreSQL: %s", cluster.pgErr)
	}
	admin := "postgres:///postgres?host=" + cluster.sock + "&user=postgres&sslmode=disable"
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := "t_" + strings.ToLower(randBase62(12))
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", admin)
		if err == nil {
			db.Exec("DROP DATABASE " + name + " WITH (FORCE)")
			db.Close()
		}
	})
	return "postgres:///" + name + "?host=" + cluster.sock + "&user=postgres&sslmode=disable"
}

func testSecrets() Secrets {
	return Secrets{1: []byte("0123456789abcdef0123456789abcdef")}
}

// newGateway opens a fresh database of kind and a gateway over it.
func newGateway(t testing.TB, kind string, o Options) (*Gateway, *DB, string) {
	t.Helper()
	dsn := newDSN(t, kind)
	db, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if o.Secrets == nil {
		o.Secrets = testSecrets()
	}
	g, err := New(db, o)
	if err != nil {
		t.Fatal(err)
	}
	return g, db, dsn
}

// serve runs g on loopback until the test ends.
func serve(t testing.TB, g *Gateway) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	})
	return "http://" + ln.Addr().String()
}
