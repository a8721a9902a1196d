package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// listenerScript accepts and closes connections on every port given as an
// argument. perl-base is Essential in Debian, so it is always there.
const listenerScript = `use strict; use IO::Socket::INET; use IO::Select;
my $sel = IO::Select->new;
for my $p (@ARGV) {
  my $s = IO::Socket::INET->new(LocalAddr => "0.0.0.0", LocalPort => $p, Listen => 128, ReuseAddr => 1, Proto => "tcp")
    or die "listen $p: $!\n";
  $sel->add($s);
}
$| = 1; print "listening on @ARGV\n";
while (1) { for my $s ($sel->can_read) { my $c = $s->accept; close $c if $c; } }
`

// avahiScript gives avahi-daemon a private /run (its pid and socket paths
// are compiled in) and its own services directory, inside the mount
// namespace ip netns exec creates for it.
const avahiScript = `set -e
mount -t tmpfs -o mode=0755 jocasta-lab /run
mkdir -p /run/avahi-daemon
mount --bind "$1" /etc/avahi/services
exec avahi-daemon --no-drop-root --no-chroot --no-rlimits -f "$2"`

func (l *Lab) startResponders(detached bool) error {
	// dnsmasq: A and PTR records for every host with a DNSName.
	dir := filepath.Join(l.Dir, "dns")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	args := []string{toolPath("dnsmasq"), "-k", "-C", "/dev/null", "--no-hosts", "--no-resolv", "-u", "root",
		"-x", filepath.Join(dir, "dnsmasq.pid"), "-z", "--listen-address=" + l.Spec.DNS.String(), "-p", "53",
		"--log-facility=-", "--log-queries"}
	for _, h := range l.Spec.Hosts {
		if h.DNSName != "" {
			args = append(args, fmt.Sprintf("--host-record=%s,%s", strings.TrimSuffix(h.DNSName, "."), h.IP))
		}
	}
	if err := l.start(detached, NodeDNS, "dnsmasq", args...); err != nil {
		return err
	}
	for _, h := range l.Spec.Hosts {
		hdir := filepath.Join(l.Dir, h.Name)
		if err := os.MkdirAll(hdir, 0o755); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		if h.MDNSName != "" || h.DNSSD != nil {
			if err := l.startAvahi(detached, h, hdir); err != nil {
				return err
			}
		}
		if h.NetBIOS != "" {
			if err := l.startNmbd(detached, h, hdir); err != nil {
				return err
			}
		}
		if h.UPnP != "" {
			if err := l.startMinidlna(detached, h, hdir); err != nil {
				return err
			}
		}
		if len(h.TCPPorts) > 0 {
			args := []string{toolPath("perl"), "-e", listenerScript}
			for _, p := range h.TCPPorts {
				args = append(args, strconv.Itoa(p))
			}
			if err := l.start(detached, h.Name, "tcp", args...); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *Lab) startAvahi(detached bool, h HostSpec, dir string) error {
	services := filepath.Join(dir, "avahi-services")
	if err := os.MkdirAll(services, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	conf := fmt.Sprintf(`[server]
host-name=%s
domain-name=local
use-ipv4=yes
use-ipv6=no
allow-interfaces=eth0
enable-dbus=no
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[wide-area]
enable-wide-area=no

[publish]
publish-workstation=no
publish-hinfo=no
publish-addresses=yes

[reflector]
enable-reflector=no

[rlimits]
`, h.avahiHostName())
	confPath := filepath.Join(dir, "avahi-daemon.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if s := h.DNSSD; s != nil {
		xml := fmt.Sprintf(`<?xml version="1.0" standalone='no'?>
<!DOCTYPE service-group SYSTEM "avahi-service.dtd">
<service-group>
  <name>%s</name>
  <service>
    <type>%s</type>
    <port>%d</port>
  </service>
</service-group>
`, s.Name, s.Type, s.Port)
		if err := os.WriteFile(filepath.Join(services, "lab.service"), []byte(xml), 0o644); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	return l.start(detached, h.Name, "avahi", toolPath("sh"), "-c", avahiScript, "lab-avahi", services, confPath)
}

// privateRunScript runs its arguments with a private tmpfs on /run, inside
// the mount namespace ip netns exec creates: nmbd's socket directory
// (/run/samba/nmbd) is compiled in, so two instances would collide.
const privateRunScript = `set -e
mount -t tmpfs -o mode=0755 jocasta-lab /run
mkdir -p /run/samba
exec "$@"`

func (l *Lab) startNmbd(detached bool, h HostSpec, dir string) error {
	nb := filepath.Join(dir, "samba")
	for _, d := range []string{"lock", "state", "cache", "pid", "private", "ncalrpc", "log"} {
		if err := os.MkdirAll(filepath.Join(nb, d), 0o755); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	conf := fmt.Sprintf(`[global]
netbios name = %s
workgroup = LABGROUP
server string = jocasta lab %s
interfaces = eth0
bind interfaces only = yes
disable netbios = no
server role = standalone server
local master = no
domain master = no
preferred master = no
dns proxy = no
wins support = no
lock directory = %[3]s/lock
state directory = %[3]s/state
cache directory = %[3]s/cache
pid directory = %[3]s/pid
private dir = %[3]s/private
ncalrpc dir = %[3]s/ncalrpc
log file = %[3]s/log/log.%%m
`, h.NetBIOS, h.Name, nb)
	confPath := filepath.Join(nb, "smb.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return l.start(detached, h.Name, "nmbd", toolPath("sh"), "-c", privateRunScript, "lab-nmbd", toolPath("nmbd"), "-F", "--no-process-group", "--debug-stdout",
		"--configfile="+confPath)
}

func (l *Lab) startMinidlna(detached bool, h HostSpec, dir string) error {
	d := filepath.Join(dir, "minidlna")
	for _, sub := range []string{"db", "log", "media"} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o755); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	conf := fmt.Sprintf(`network_interface=eth0
port=%d
friendly_name=%s
db_dir=%[3]s/db
log_dir=%[3]s/log
media_dir=%[3]s/media
inotify=no
notify_interval=30
`, UPnPPort, h.UPnP, d)
	confPath := filepath.Join(d, "minidlna.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return l.start(detached, h.Name, "minidlna", toolPath("minidlnad"), "-S", "-f", confPath,
		"-P", filepath.Join(d, "minidlna.pid"))
}

// start runs a responder in a node's namespace, with its output in
// Dir/<node>.<what>.log.
func (l *Lab) start(detached bool, nodeName, what string, args ...string) error {
	logPath := filepath.Join(l.Dir, nodeName+"."+what+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	defer f.Close()
	cmd := exec.Command(toolPath("ip"), append([]string{"netns", "exec", l.NS[nodeName]}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = l.Dir
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("lab: start %s in %s: %w", what, nodeName, err)
	}
	p := &proc{name: nodeName + "/" + what, log: logPath, cmd: cmd, done: make(chan struct{})}
	if detached {
		// lab.sh down finds it again through its namespace.
		_ = cmd.Process.Release()
		close(p.done)
		return nil
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	return nil
}

// exited reports responders that have already died, with their log tails.
func (l *Lab) exited() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range l.procs {
		select {
		case <-p.done:
			out = append(out, fmt.Sprintf("%s exited (%v): %s", p.name, p.cmd.ProcessState, logTail(p.log)))
		default:
		}
	}
	return out
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return strings.TrimSpace(string(b))
}
