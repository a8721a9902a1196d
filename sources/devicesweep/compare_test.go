package devicesweep

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/jocasta/jocasta/sources/icmpsweep"
	"github.com/jocasta/jocasta/sources/lab"
)

// slash22Spec is a /22 lab: ten hosts spread over the prefix, two of them
// dropping ICMP, and 1010 silent addresses.
func slash22Spec() lab.Spec {
	a := netip.MustParseAddr
	s := lab.Spec{Prefix: netip.MustParsePrefix("10.77.0.0/22"), Scanner: a("10.77.0.2"), DNS: a("10.77.0.3")}
	for i, ip := range []string{"10.77.0.10", "10.77.0.200", "10.77.1.20", "10.77.1.130", "10.77.1.250", "10.77.2.30", "10.77.2.140", "10.77.3.40", "10.77.3.180", "10.77.3.254"} {
		s.Hosts = append(s.Hosts, lab.HostSpec{Name: fmt.Sprintf("h%d", i+1), IP: a(ip), DropICMP: i == 3 || i == 7})
	}
	return s
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestLabCompareSweepers times our sweeps against fping and nmap -sn on a
// /22, side by side in one run, with the same rate, rounds and wait, and
// prints a table: once on-link (a lab bridge: the device sweep sends its
// own ARP requests; an ICMP probe to a silent address costs the kernel a
// neighbour entry and three ARP requests) and once routed (the /22 behind
// a router namespace: ICMP, the rate is the limit). The device sweep runs
// twice: as configured (ARP on-link, since we are root) and ICMP only
// (the fallback without CAP_NET_RAW).
// It measures and asserts nothing about time: run it with
// sources/icmpsweep/bench_lab.sh (JOCASTA_BENCH_LAB=1; JOCASTA_BENCH_RATE,
// _ROUNDS, _WAIT_MS change the parameters).
func TestLabCompareSweepers(t *testing.T) {
	if os.Getenv("JOCASTA_BENCH_LAB") != "1" {
		t.Skip("SKIPPING BENCHMARK: set JOCASTA_BENCH_LAB=1 (see sources/icmpsweep/bench_lab.sh)")
	}
	for _, tool := range []string{"fping", "nmap"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed (apt-get install -y fping nmap)", tool)
		}
	}
	rate, rounds := envInt("JOCASTA_BENCH_RATE", 1000), envInt("JOCASTA_BENCH_ROUNDS", 2)
	wait := time.Duration(envInt("JOCASTA_BENCH_WAIT_MS", 2000)) * time.Millisecond
	params := icmpsweep.Params{Rate: rate, Rounds: rounds, Wait: wait}
	var out strings.Builder

	spec := slash22Spec()
	l := lab.New(t, spec)
	compare(t, &out, "on-link /22 (lab bridge): 10 hosts answer ICMP, 2 only ARP, 1010 addresses silent",
		lab.DoInNamespace, "/run/netns/"+l.ScannerNS(), l.ScannerNS(), spec.Prefix, params)

	scanner, prefix := routedSlash22(t, 10)
	compare(t, &out, "routed /22 (behind a router namespace): 10 addresses answer, 1012 silent",
		lab.DoInNamespace, "/run/netns/"+scanner, scanner, prefix, params)

	fmt.Println(out.String())
}

// routedSlash22 puts 10.99.0.0/22 behind a router namespace that owns n of
// its addresses and drops the rest (forwarding off, ICMP errors rate
// limited to one per 100s).
func routedSlash22(t *testing.T, n int) (string, netip.Prefix) {
	scanner, router := lab.NewNamespace(t), lab.NewNamespace(t)
	if err := lab.IP(scanner, "link add r0 type veth peer name s0 netns "+router, "addr add 10.98.0.1/30 dev r0",
		"link set r0 up", "route add 10.99.0.0/22 via 10.98.0.2"); err != nil {
		t.Fatal(err)
	}
	cmds := []string{"addr add 10.98.0.2/30 dev s0", "link set s0 up"}
	for i := range n {
		cmds = append(cmds, fmt.Sprintf("addr add 10.99.%d.%d/32 dev lo", i%4, 10+i*23))
	}
	if err := lab.IP(router, cmds...); err != nil {
		t.Fatal(err)
	}
	for ns, kv := range map[string][2]string{
		scanner: {"net.ipv4.ping_group_range", "0 2147483647"},
		router:  {"net.ipv4.icmp_ratelimit", "100000"},
	} {
		if err := lab.Sysctl(ns, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	return scanner, netip.MustParsePrefix("10.99.0.0/22")
}

type doFunc func(path string, fn func() error) error

func compare(t *testing.T, out *strings.Builder, title string, do doFunc, nsPath, ns string, prefix netip.Prefix, params icmpsweep.Params) {
	t.Helper()
	const addresses = 1022
	bound := icmpsweep.Estimate(addresses, params)
	rate, rounds, wait := params.Rate, params.Rounds, params.Wait
	type row struct {
		tool, cmd string
		took      time.Duration
		found     int
		note      string
	}
	var rows []row
	execIn := func(args ...string) ([]byte, error) {
		return exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	}
	flush := func() {
		// Every tool starts with an empty neighbour table.
		if out, err := execIn("ip", "neigh", "flush", "all"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}

	flush()
	var res icmpsweep.Result
	start := time.Now()
	err := do(nsPath, func() error {
		p, err := icmpsweep.Open(icmpsweep.Options{})
		if err != nil {
			return err
		}
		defer p.Close()
		res, err = p.Sweep(context.Background(), []netip.Prefix{prefix}, params)
		return err
	})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	rows = append(rows, row{"jocasta icmpsweep", fmt.Sprintf("Sweep(%s, rate %d, rounds %d, wait %v)", prefix, rate, rounds, wait), took, len(res.Responders),
		fmt.Sprintf("ICMP only; %d probes, %d ENOBUFS retries; %+.1f%% of the bound %v", res.ProbesSent, res.Retries, 100*(took.Seconds()/bound.Seconds()-1), bound)})

	// The device sweep: with ARP on-link (we are root), then ICMP only
	// (the fallback without CAP_NET_RAW).
	for _, disableARP := range []bool{false, true} {
		flush()
		var modes []string
		s, err := New(Config{Networks: []netip.Prefix{prefix}, Rate: rate, Rounds: rounds, Wait: wait, ResolveMACs: true, DisableARP: disableARP,
			Log: funcLogger(func(m string) {
				if strings.Contains(m, " sweep") && !strings.Contains(m, "left out") {
					modes = append(modes, strings.TrimPrefix(m, "devicesweep: "+prefix.String()+": "))
				}
			})})
		if err != nil {
			t.Fatal(err)
		}
		var (
			found, probes int
			viaARP, rtts  int
		)
		start = time.Now()
		err = do(nsPath, func() error {
			sw, err := s.Run(context.Background())
			if sw != nil {
				found, probes = len(sw.Hosts), sw.ProbesSent
				for _, h := range sw.Hosts {
					if h.Via == "arp" {
						viaARP++
					}
					if h.RTT > 0 {
						rtts++
					}
				}
			}
			return err
		})
		took = time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		tool, cmd := "jocasta devicesweep", "Run: ARP on-link (CAP_NET_RAW), else ICMP; + neighbour table"
		if disableARP {
			tool, cmd = "jocasta devicesweep, ICMP only", "Run with DisableARP (as without CAP_NET_RAW)"
		}
		rows = append(rows, row{tool, cmd, took, found,
			fmt.Sprintf("%s; %d probes, %d via ARP, %d with RTT; %+.1f%% of the bound", strings.Join(modes, "; "), probes, viaARP, rtts, 100*(took.Seconds()/bound.Seconds()-1))})
		if viaARP == 0 {
			break // not on-link: the ICMP-only run would be the same sweep
		}
	}

	run := func(tool string, args ...string) (string, time.Duration) {
		flush()
		start := time.Now()
		out, _ := execIn(append([]string{tool}, args...)...) // fping exits 1 when some hosts are down
		return string(out), time.Since(start)
	}
	fpingArgs := []string{"-q", "-a", "-g", prefix.String(), "-i", strconv.Itoa(max(1000/rate, 1)), "-r", strconv.Itoa(rounds - 1),
		"-t", strconv.Itoa(int(wait.Milliseconds())), "-B", "1"}
	fout, took := run("fping", fpingArgs...)
	fpingFound := 0
	for _, line := range strings.Split(fout, "\n") {
		if _, err := netip.ParseAddr(strings.TrimSpace(line)); err == nil {
			fpingFound++
		}
	}
	rows = append(rows, row{"fping " + fpingVersion(), "fping " + strings.Join(fpingArgs, " "), took, fpingFound, "retries after -t; ignores ENOBUFS"})

	nmapUp := regexp.MustCompile(`\((\d+) hosts? up\)`)
	pace := []string{"--min-rate", strconv.Itoa(rate), "--max-rate", strconv.Itoa(rate), "--max-retries", strconv.Itoa(rounds - 1)}
	waitMs := strconv.Itoa(int(wait.Milliseconds())) + "ms"
	nmapRows := []struct {
		note string
		args []string
	}{
		{"ICMP echo only, adaptive timeouts", append([]string{"-sn", "-n", "-PE", "--disable-arp-ping"}, pace...)},
		{"ICMP echo only, timeout = wait", append([]string{"-sn", "-n", "-PE", "--disable-arp-ping", "--min-rtt-timeout", waitMs, "--max-rtt-timeout", waitMs, "--initial-rtt-timeout", waitMs}, pace...)},
		{"default probes (ARP on-link), adaptive", append([]string{"-sn", "-n"}, pace...)},
		{"default probes (ARP on-link), timeout = wait", append([]string{"-sn", "-n", "--min-rtt-timeout", waitMs, "--max-rtt-timeout", waitMs, "--initial-rtt-timeout", waitMs}, pace...)},
	}
	for _, nr := range nmapRows {
		args := append(nr.args, prefix.String())
		nout, took := run("nmap", args...)
		n := -1
		if m := nmapUp.FindStringSubmatch(nout); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		rows = append(rows, row{"nmap 7.93", "nmap " + strings.Join(args, " "), took, n, nr.note})
	}

	fmt.Fprintf(out, "\n%s; rate %d/s, rounds %d, wait %v; bound addresses×rounds/rate+wait = %v\n", title, rate, rounds, wait, bound)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOOL\tTIME\tFOUND\tNOTE\tCOMMAND")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%.2fs\t%d\t%s\t%s\n", r.tool, r.took.Seconds(), r.found, r.note, r.cmd)
	}
	w.Flush()
}

func fpingVersion() string {
	out, err := exec.Command("fping", "-v").CombinedOutput()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out))
	return strings.TrimSuffix(f[len(f)-1], ",")
}
