package lab

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvInside carries the lab description (JSON) to a test re-run inside the
// scanner namespace; see [Lab.InScanner].
const EnvInside = "JOCASTA_LAB_INSIDE"

// Node names that are not hosts.
const (
	NodeScanner = "scanner"
	NodeDNS     = "dns"
	NodeBridge  = "br"
)

// Options tune [Build].
type Options struct {
	// Name of the lab, also the prefix of its namespaces. Empty: "jl" and
	// six random hex digits, so parallel labs never collide.
	Name string
	// Logf receives progress messages; nil discards them.
	Logf func(format string, args ...any)
	// Detached starts responders in their own sessions so that they
	// outlive the builder (lab.sh up). Otherwise they get SIGKILL when the
	// builder dies.
	Detached bool
	// ReadyTimeout bounds the wait for responders (default 45s).
	ReadyTimeout time.Duration
}

// Lab is a set of network namespaces on one bridge, with responders.
//
// The exported fields describe the lab; they travel as JSON to a test
// re-run in the scanner namespace and to lab.sh down.
type Lab struct {
	Name string `json:"name"`
	Spec Spec   `json:"spec"`
	// NS maps a node (host name, NodeScanner, NodeDNS, NodeBridge) to its
	// network namespace.
	NS map[string]string `json:"ns"`
	// MACs maps a node to the MAC of its eth0.
	MACs map[string]string `json:"macs"`
	// Dir holds configuration files and responder logs.
	Dir string `json:"dir"`

	inside bool // a copy inside the scanner namespace: Close does nothing
	logf   func(format string, args ...any)

	mu    sync.Mutex
	procs []*proc
}

type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// Require skips the test loudly unless it can build a lab: root, and the
// tools iproute2, dnsmasq-base, avahi-daemon, samba (nmbd), minidlna and
// perl-base. With CI=true it fails instead. Lab tests also skip with
// -short.
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (network namespaces)")
	}
	for _, tool := range []string{"ip", "dnsmasq", "avahi-daemon", "nmbd", "minidlnad", "perl", "sh", "mount"} {
		if _, err := lookTool(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	ci := os.Getenv("CI") == "true"
	if len(missing) > 0 {
		msg := "lab: needs " + strings.Join(missing, ", ") +
			" (as root: apt-get install -y iproute2 dnsmasq-base avahi-daemon samba minidlna)"
		if ci {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING LAB TEST: " + msg)
	}
	if testing.Short() && !ci {
		t.Skip("SKIPPING LAB TEST: -short")
	}
}

// New builds a lab for a test and tears it down when the test ends, even
// when it fails. Inside the scanner namespace (a test re-run by
// [Lab.InScanner]) it returns the lab described by the environment
// instead of building another.
func New(t testing.TB, spec Spec) *Lab {
	t.Helper()
	if l, ok := FromEnv(); ok {
		if l.Spec.Prefix != spec.Prefix || len(l.Spec.Hosts) != len(spec.Hosts) {
			t.Fatalf("lab: the lab in %s (%v) is not the one this test builds (%v)", EnvInside, l.Spec.Prefix, spec.Prefix)
		}
		return l
	}
	Require(t)
	l, err := Build(spec, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("lab: tear down: %v", err)
		}
	})
	return l
}

// Build creates the namespaces, starts the responders and waits until
// each answers from the scanner namespace. On error everything built so
// far is removed.
func Build(spec Spec, opts Options) (l *Lab, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if opts.Name == "" {
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("lab: random name: %w", err)
		}
		opts.Name = "jl" + hex.EncodeToString(b[:])
	}
	if !nameRE.MatchString(opts.Name) || len(opts.Name) > 8 {
		return nil, fmt.Errorf("lab: name %q: want at most 8 of a-z, 0-9, '-'", opts.Name)
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 45 * time.Second
	}
	l = &Lab{
		Name: opts.Name,
		Spec: cloneSpec(spec),
		NS:   map[string]string{},
		MACs: map[string]string{},
		logf: opts.Logf,
	}
	for _, n := range l.nodes() {
		l.NS[n.name] = l.Name + "-" + n.name
		l.MACs[n.name] = n.mac
	}
	l.NS[NodeBridge] = l.Name + "-" + NodeBridge
	if _, err := os.Stat("/run/netns/" + l.NS[NodeBridge]); err == nil {
		return nil, fmt.Errorf("lab: namespace %s already exists (lab.sh down %s removes it)", l.NS[NodeBridge], l.Name)
	}
	l.Dir, err = os.MkdirTemp("", "jocasta-lab-"+l.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("lab: temp dir: %w", err)
	}
	defer func() {
		if err != nil {
			if cerr := l.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			l = nil
		}
	}()
	start := time.Now()
	if err := l.buildNetwork(); err != nil {
		return l, err
	}
	if err := l.startResponders(opts.Detached); err != nil {
		return l, err
	}
	if err := l.waitReady(opts.ReadyTimeout); err != nil {
		return l, err
	}
	l.log("lab %s: %d namespaces on %v ready in %v (scanner %s)", l.Name, len(l.NS), l.Spec.Prefix,
		time.Since(start).Round(time.Millisecond), l.NS[NodeScanner])
	return l, nil
}

type node struct {
	name string
	ip   netip.Addr
	mac  string
	host *HostSpec // nil for scanner and dns
}

func (l *Lab) nodes() []node {
	ns := []node{
		{name: NodeScanner, ip: l.Spec.Scanner, mac: defaultMAC(l.Spec.Scanner)},
		{name: NodeDNS, ip: l.Spec.DNS, mac: defaultMAC(l.Spec.DNS)},
	}
	for i := range l.Spec.Hosts {
		h := &l.Spec.Hosts[i]
		mac := h.MAC
		if mac == "" {
			mac = defaultMAC(h.IP)
		}
		if m, err := net.ParseMAC(mac); err == nil {
			mac = m.String()
		}
		ns = append(ns, node{name: h.Name, ip: h.IP, mac: mac, host: h})
	}
	return ns
}

func (l *Lab) buildNetwork() error {
	br := l.NS[NodeBridge]
	if err := l.ip("netns", "add", br); err != nil {
		return err
	}
	if err := l.ipBatch(br,
		"link set lo up",
		"link add br0 type bridge stp_state 0 forward_delay 0 mcast_snooping 0",
		"link set br0 up"); err != nil {
		return err
	}
	bits := l.Spec.Prefix.Bits()
	for i, n := range l.nodes() {
		ns := l.NS[n.name]
		if err := l.ip("netns", "add", ns); err != nil {
			return err
		}
		port := "v" + strconv.Itoa(i)
		if err := l.ipBatch(br,
			fmt.Sprintf("link add %s type veth peer name eth0 netns %s", port, ns),
			fmt.Sprintf("link set %s master br0", port),
			fmt.Sprintf("link set %s up", port)); err != nil {
			return err
		}
		if err := l.ipBatch(ns,
			"link set lo up",
			"link set eth0 address "+n.mac,
			fmt.Sprintf("addr add %s/%d dev eth0", n.ip, bits),
			"link set eth0 up",
			"route add 224.0.0.0/4 dev eth0"); err != nil {
			return err
		}
		sysctls := map[string]string{"net/ipv4/ping_group_range": "0 2147483647"}
		if n.host != nil && n.host.DropICMP {
			sysctls["net/ipv4/icmp_echo_ignore_all"] = "1"
		}
		if err := l.Do(ns, func() error {
			for k, v := range sysctls {
				if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("lab: sysctl in %s: %w", ns, err)
		}
	}
	// The scanner resolves through the lab's dnsmasq (ip netns exec
	// bind-mounts this over /etc/resolv.conf).
	etc := filepath.Join("/etc/netns", l.NS[NodeScanner])
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	rc := fmt.Sprintf("# jocasta lab %s\nnameserver %s\noptions timeout:1 attempts:2\n", l.Name, l.Spec.DNS)
	if err := os.WriteFile(filepath.Join(etc, "resolv.conf"), []byte(rc), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

func (l *Lab) log(format string, args ...any) {
	if l.logf != nil {
		l.logf(format, args...)
	}
}

// ScannerNS is the name of the scanner's network namespace.
func (l *Lab) ScannerNS() string { return l.NS[NodeScanner] }

// Host returns the current description of a host (its IP changes with
// [Lab.Move]).
func (l *Lab) Host(name string) (HostSpec, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range l.Spec.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return HostSpec{}, false
}

// MAC is the MAC of a node's eth0, parsed.
func (l *Lab) MAC(node string) net.HardwareAddr {
	m, err := net.ParseMAC(l.MACs[node])
	if err != nil {
		return nil
	}
	return m
}

// Move gives a host a new address (the "host that changes address"); its
// MAC stays. The responders in it keep running.
func (l *Lab) Move(t testing.TB, host string, newIP netip.Addr) {
	t.Helper()
	if err := l.move(host, newIP); err != nil {
		t.Fatal(err)
	}
}

func (l *Lab) move(host string, newIP netip.Addr) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !newIP.Is4() || !l.Spec.Prefix.Contains(newIP) {
		return fmt.Errorf("lab: move %s: %v is not inside %v", host, newIP, l.Spec.Prefix)
	}
	idx := -1
	for i, h := range l.Spec.Hosts {
		if h.Name == host {
			idx = i
		} else if h.IP == newIP {
			return fmt.Errorf("lab: move %s: %v belongs to %s", host, newIP, h.Name)
		}
	}
	if newIP == l.Spec.Scanner || newIP == l.Spec.DNS {
		return fmt.Errorf("lab: move %s: %v belongs to the scanner or dns", host, newIP)
	}
	if idx < 0 {
		return fmt.Errorf("lab: move: no host %q", host)
	}
	// Flush first: removing a primary address also removes its
	// secondaries, and the multicast route goes with the last address.
	if err := l.ipBatch(l.NS[host],
		"addr flush dev eth0 scope global",
		fmt.Sprintf("addr add %s/%d dev eth0", newIP, l.Spec.Prefix.Bits()),
		"route replace 224.0.0.0/4 dev eth0"); err != nil {
		return fmt.Errorf("lab: move %s: %w", host, err)
	}
	l.log("lab %s: moved %s from %v to %v", l.Name, host, l.Spec.Hosts[idx].IP, newIP)
	l.Spec.Hosts[idx].IP = newIP
	return nil
}

// Exec runs a command in a node's namespace (a node name such as
// "scanner" or a full namespace name) and returns its combined output.
func (l *Lab) Exec(ns string, args ...string) ([]byte, error) {
	if full, ok := l.NS[ns]; ok {
		ns = full
	}
	if len(args) == 0 {
		return nil, errors.New("lab: exec: no command")
	}
	out, err := exec.Command(toolPath("ip"), append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("lab: exec in %s: %s: %w: %s", ns, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// Close stops every responder, deletes the namespaces and removes the
// lab's files. It is safe to call more than once; inside the scanner
// namespace it does nothing.
func (l *Lab) Close() error {
	if l == nil || l.inside {
		return nil
	}
	var errs []error
	l.mu.Lock()
	procs := l.procs
	l.procs = nil
	l.mu.Unlock()
	for _, p := range procs {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	}
	deadline := time.After(3 * time.Second)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	// Whatever is still running inside our namespaces was started by this
	// lab (or by a detached lab.sh up): stop it by pid.
	names := make([]string, 0, len(l.NS))
	for _, ns := range l.NS {
		names = append(names, ns)
	}
	slices.Sort(names)
	if err := killInNamespaces(names); err != nil {
		errs = append(errs, err)
	}
	for _, ns := range names {
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			continue
		}
		if err := l.ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	if ns := l.NS[NodeScanner]; ns != "" {
		if err := os.RemoveAll(filepath.Join("/etc/netns", ns)); err != nil {
			errs = append(errs, fmt.Errorf("lab: %w", err))
		}
	}
	if l.Dir != "" && strings.Contains(l.Dir, "jocasta-lab-") {
		if err := os.RemoveAll(l.Dir); err != nil {
			errs = append(errs, fmt.Errorf("lab: %w", err))
		}
	}
	return errors.Join(errs...)
}

// killInNamespaces stops the processes whose network namespace is one of
// names: SIGTERM, then SIGKILL after two seconds.
func killInNamespaces(names []string) error {
	pidsIn := func() []int {
		var pids []int
		for _, ns := range names {
			if _, err := os.Stat("/run/netns/" + ns); err != nil {
				continue
			}
			out, err := exec.Command(toolPath("ip"), "netns", "pids", ns).Output()
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
					pids = append(pids, pid)
				}
			}
		}
		return pids
	}
	pids := pidsIn()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for end := time.Now().Add(2 * time.Second); len(pids) > 0 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
		pids = pidsIn()
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(pids) > 0 {
		time.Sleep(100 * time.Millisecond)
		if left := pidsIn(); len(left) > 0 {
			return fmt.Errorf("lab: processes %v still running in the lab's namespaces", left)
		}
	}
	return nil
}

func (l *Lab) ip(args ...string) error {
	out, err := exec.Command(toolPath("ip"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("lab: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ipBatch runs several ip commands in one namespace with one process.
func (l *Lab) ipBatch(ns string, cmds ...string) error {
	c := exec.Command(toolPath("ip"), "-n", ns, "-batch", "-")
	c.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	out, err := c.CombinedOutput()
	if err != nil {
		return fmt.Errorf("lab: ip -n %s: %q: %w: %s", ns, cmds, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("lab: %s not found", name)
}

func toolPath(name string) string {
	if p, err := lookTool(name); err == nil {
		return p
	}
	return name
}

func cloneSpec(s Spec) Spec {
	c := s
	c.Hosts = make([]HostSpec, len(s.Hosts))
	for i, h := range s.Hosts {
		h.TCPPorts = slices.Clone(h.TCPPorts)
		if h.DNSSD != nil {
			d := *h.DNSSD
			h.DNSSD = &d
		}
		c.Hosts[i] = h
	}
	return c
}

// NewNamespace creates a bare network namespace (only lo, up) for a test
// and deletes it when the test ends; it needs root but none of the
// responders. The name is "jl" + random hex + "-ns". Note that a new
// namespace starts with net.ipv4.ping_group_range "1 0" (see [Sysctl]).
func NewNamespace(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		msg := "lab: needs root (network namespaces)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING NAMESPACE TEST: " + msg)
	}
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	ns := "jl" + hex.EncodeToString(b[:]) + "-ns"
	l := &Lab{}
	if err := l.ip("netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := killInNamespaces([]string{ns}); err != nil {
			t.Error(err)
		}
		if err := l.ip("netns", "del", ns); err != nil {
			t.Error(err)
		}
	})
	if err := l.ipBatch(ns, "link set lo up"); err != nil {
		t.Fatal(err)
	}
	return ns
}

// Sysctl writes one sysctl (key as in "net.ipv4.ping_group_range") inside a
// network namespace given by name.
func Sysctl(ns, key, value string) error {
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	return DoInNamespace(filepath.Join("/run/netns", ns), func() error {
		return os.WriteFile(path, []byte(value), 0o644)
	})
}

// IP runs `ip -n ns -batch -` with the given commands ("link set lo up").
func IP(ns string, cmds ...string) error {
	return (&Lab{}).ipBatch(ns, cmds...)
}
