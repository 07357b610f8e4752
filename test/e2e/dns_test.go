//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	dnsv1alpha1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
	"github.com/kubefed-io/kubefed/controllers/dns"
	"github.com/kubefed-io/kubefed/test/framework"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

// The DNS specs publish records under dnsZone, served by a named of their
// own on loopback, through the real ExternalDNS.
const (
	dnsZone       = "kubefed.test"
	dnsFederation = "e2e-fed"
	dnsNS         = "e2e-dns"
	dnsTSIGKey    = "kubefed-e2e"
	// The members' load-balancer addresses, from the documentation ranges:
	// DNS answers them, nothing connects to them.
	dnsIP1 = "192.0.2.10"
	dnsIP2 = "198.51.100.20"
	// ExternalDNS syncs on events at most every second and a member is
	// marked not ready within a few probe periods; both fit well within it.
	dnsTimeout = 2 * time.Minute
)

// dnsTopology is where each member's Nodes say it runs. member1's region is
// the one the Member clusters specs give its Nodes, because a member's region
// is only set while all its Nodes agree.
var dnsTopology = []struct{ zone, region string }{
	{zone: "dns-zone-1", region: "region-1"},
	{zone: "dns-zone-2", region: "region-2"},
}

// process is a program a spec runs, killed with the test process.
type process struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

func startProcess(dir, name string, env []string, bin string, args ...string) *process {
	GinkgoHelper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	Expect(err).NotTo(HaveOccurred())
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	Expect(cmd.Start()).To(Succeed(), "start %s", bin)
	p := &process{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p
}

func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// freeDNSPort returns a loopback port free for both UDP and TCP.
func freeDNSPort() int {
	GinkgoHelper()
	for range 20 {
		ports, err := localcluster.FreeLoopbackPorts(1)
		Expect(err).NotTo(HaveOccurred())
		port := ports[0]
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			u.Close()
			return port
		}
	}
	Fail("no loopback port is free for both UDP and TCP")
	return 0
}

// dnsServer is BIND serving dnsZone on 127.0.0.1:port, updatable with the
// TSIG key.
type dnsServer struct {
	*process
	port   int
	secret string
}

var tsigSecret = regexp.MustCompile(`secret "([^"]+)"`)

func startDNSServer(ctx context.Context, dir string) *dnsServer {
	GinkgoHelper()
	keyConf, err := exec.CommandContext(ctx, "tsig-keygen", "-a", "hmac-sha256", dnsTSIGKey).Output()
	Expect(err).NotTo(HaveOccurred())
	m := tsigSecret.FindSubmatch(keyConf)
	Expect(m).NotTo(BeNil(), "no secret in tsig-keygen output")
	port := freeDNSPort()
	zoneFile := filepath.Join(dir, dnsZone+".zone")
	Expect(os.WriteFile(zoneFile, []byte(fmt.Sprintf(`$TTL 60
@ IN SOA ns.%[1]s. hostmaster.%[1]s. 1 60 60 600 60
@ IN NS ns.%[1]s.
ns IN A 127.0.0.1
`, dnsZone)), 0o644)).To(Succeed())
	conf := filepath.Join(dir, "named.conf")
	Expect(os.WriteFile(conf, []byte(fmt.Sprintf(`%[1]s
options {
  directory "%[2]s";
  pid-file "%[2]s/named.pid";
  session-keyfile "%[2]s/session.key";
  managed-keys-directory "%[2]s";
  listen-on port %[3]d { 127.0.0.1; };
  listen-on-v6 { none; };
  recursion no;
  dnssec-validation no;
  allow-query { 127.0.0.1; };
};
controls { };
zone "%[4]s" {
  type primary;
  file "%[5]s";
  allow-update { key "%[6]s"; };
  allow-transfer { key "%[6]s"; };
};
`, keyConf, dir, port, dnsZone, zoneFile, dnsTSIGKey)), 0o600)).To(Succeed())

	s := &dnsServer{process: startProcess(dir, "named", nil, "named", "-g", "-c", conf), port: port, secret: string(m[1])}
	Eventually(func(g Gomega) {
		g.Expect(s.exited()).To(BeFalse(), "named exited:\n%s", framework.ReadFile(s.logPath))
		out, err := s.dig(ctx, dnsZone, "SOA")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring("hostmaster." + dnsZone))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return s
}

func (s *dnsServer) dig(ctx context.Context, name, rrType string) (string, error) {
	out, err := exec.CommandContext(ctx, "dig", "+short", "+norecurse", "+time=2", "+tries=1",
		"@127.0.0.1", "-p", strconv.Itoa(s.port), name, rrType).CombinedOutput()
	return string(out), err
}

// addresses returns the IPv4 addresses the server answers for name,
// following the CNAMEs in its zone, sorted.
func (s *dnsServer) addresses(ctx context.Context, name string) ([]string, error) {
	out, err := s.dig(ctx, name, "A")
	if err != nil {
		return nil, fmt.Errorf("dig %s: %w: %s", name, err, out)
	}
	var ips []string
	for _, line := range strings.Fields(out) {
		if ip := net.ParseIP(line); ip != nil {
			ips = append(ips, ip.String())
		}
	}
	slices.Sort(ips)
	return ips, nil
}

// hostKubeconfig writes a kubeconfig whose only context is the host cluster,
// for ExternalDNS, which has no --context flag.
func hostKubeconfig(dir string) string {
	GinkgoHelper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["host"] = &clientcmdapi.Cluster{Server: fw.Host.Config.Host, CertificateAuthorityData: fw.Host.Config.CAData}
	cfg.AuthInfos["host"] = &clientcmdapi.AuthInfo{Token: fw.Host.Config.BearerToken}
	cfg.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "host"}
	cfg.CurrentContext = "host"
	path := filepath.Join(dir, "host.kubeconfig")
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}

// startExternalDNS runs ExternalDNS with its CRD source on the host's
// DNSEndpoints and its RFC 2136 provider on server, as docs/dns.md says.
func startExternalDNS(dir string, server *dnsServer) *process {
	GinkgoHelper()
	metricsAddr, err := framework.FreeLoopbackAddr()
	Expect(err).NotTo(HaveOccurred())
	p := startProcess(dir, "external-dns",
		// The TSIG secret goes in the environment, not the command line.
		[]string{"EXTERNAL_DNS_RFC2136_TSIG_SECRET=" + server.secret},
		fw.Bin("external-dns"),
		"--source=crd",
		"--crd-source-apiversion=multiclusterdns.kubefed.io/v1alpha1",
		"--crd-source-kind=DNSEndpoint",
		"--provider=rfc2136",
		"--rfc2136-host=127.0.0.1",
		"--rfc2136-port="+strconv.Itoa(server.port),
		"--rfc2136-zone="+dnsZone,
		"--rfc2136-tsig-keyname="+dnsTSIGKey,
		"--rfc2136-tsig-secret-alg=hmac-sha256",
		"--rfc2136-tsig-axfr",
		"--domain-filter="+dnsZone,
		"--registry=txt",
		"--txt-owner-id=kubefed-e2e",
		"--policy=sync",
		"--interval=10s",
		"--events",
		"--min-event-sync-interval=1s",
		"--kubeconfig="+hostKubeconfig(dir),
		"--metrics-address="+metricsAddr,
		"--log-level=debug",
	)
	Consistently(p.exited).WithTimeout(3*time.Second).Should(BeFalse(), "external-dns exited:\n%s", framework.ReadFile(p.logPath))
	return p
}

var _ = Describe("Multi-cluster DNS", Ordered, func() {
	var (
		server *dnsServer
		extDNS *process
		names  struct{ global, region1, zone1, region2, zone2 string }
	)
	svcName := "web"

	record := func(ctx context.Context, name string) *dnsv1alpha1.ServiceDNSRecord {
		GinkgoHelper()
		rec := &dnsv1alpha1.ServiceDNSRecord{}
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: dnsNS, Name: name}, rec)).To(Succeed())
		return rec
	}
	readyReason := func(ctx context.Context, name string) string {
		rec := &dnsv1alpha1.ServiceDNSRecord{}
		if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: dnsNS, Name: name}, rec); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(rec.Status.Conditions, dns.ConditionReady); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return "no condition"
	}
	answers := func(ctx context.Context, name string) func() ([]string, error) {
		return func() ([]string, error) { return server.addresses(ctx, name) }
	}
	// logsOnFailure prints the tails of the DNS programs' logs when a spec failed.
	logsOnFailure := func() {
		if !CurrentSpecReport().Failed() {
			return
		}
		for _, p := range []*process{server.process, extDNS} {
			if p != nil {
				GinkgoWriter.Printf("--- %s\n%s\n", p.logPath, tailLines(framework.ReadFile(p.logPath), 60))
			}
		}
	}

	BeforeAll(func(ctx context.Context) {
		for _, tool := range []string{"named", "dig", "tsig-keygen"} {
			_, err := exec.LookPath(tool)
			Expect(err).NotTo(HaveOccurred(), "%s is missing: run make dns-tools", tool)
		}
		Expect(fw.Bin("external-dns")).To(BeAnExistingFile(), "run make dns-tools")

		Expect(framework.EnsureNamespace(ctx, fw.Host.Client, kubefedNS)).To(Succeed())
		cfg := fastProbeConfig()
		if err := fw.Host.Client.Create(ctx, cfg); err == nil {
			DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, cfg)) })
		} else {
			Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
		}
		for _, c := range fw.Clusters() {
			Expect(framework.EnsureNamespace(ctx, c.Client, dnsNS)).To(Succeed())
		}

		// Nodes give the members their zones and region; they exist before
		// the cluster controller first sees the members ready, when it
		// collects them.
		for i, m := range fw.Members {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
				Name: "e2e-dns-node",
				Labels: map[string]string{
					corev1.LabelTopologyZone:   dnsTopology[i].zone,
					corev1.LabelTopologyRegion: dnsTopology[i].region,
				},
			}}
			Expect(client.IgnoreAlreadyExists(m.Client.Create(ctx, node))).To(Succeed())
			DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(m.Client.Delete(ctx, node)) })
		}

		// Members joined here, and only those, are unjoined at the end.
		for _, m := range fw.Members {
			existed := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: m.Name}, &corev1beta1.KubeFedCluster{}) == nil
			_, _, err := fw.Kubefedctl(ctx, "join", m.Name, "--cluster-context", m.Name,
				"--host-cluster-context", fw.Host.Name, "--error-on-existing=false")
			Expect(err).NotTo(HaveOccurred())
			if !existed {
				DeferCleanup(func(ctx context.Context) {
					_, _, err := fw.Kubefedctl(ctx, "unjoin", m.Name, "--cluster-context", m.Name, "--host-cluster-context", fw.Host.Name)
					Expect(err).NotTo(HaveOccurred())
				})
			}
		}

		// The real controller-manager: the KubeFedCluster, propagation and
		// DNS controllers, as users run them.
		_, err := fw.Kubectl(ctx, fw.Host.Name, "apply", "--server-side", "-f", filepath.Join(fw.RepoRoot, "config", "default-types"))
		Expect(err).NotTo(HaveOccurred())
		cm, err := fw.StartControllerManager(ctx, filepath.Join(GinkgoT().TempDir(), "cm"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() error { return cm.Stop() })
		for i, m := range fw.Members {
			Eventually(func(g Gomega) {
				kfc := kubeFedCluster(ctx, m.Name)
				g.Expect(condition(kfc, corev1beta1.ClusterReady)).NotTo(BeNil())
				g.Expect(condition(kfc, corev1beta1.ClusterReady).Status).To(Equal(corev1.ConditionTrue))
				g.Expect(kfc.Status.Zones).To(ContainElement(dnsTopology[i].zone))
				g.Expect(kfc.Status.Region).To(Equal(ptr.To(dnsTopology[i].region)))
			}).WithTimeout(dnsTimeout).WithPolling(time.Second).Should(Succeed(), "member %s ready with its zone and region", m.Name)
		}

		dir := GinkgoT().TempDir()
		server = startDNSServer(ctx, dir)
		DeferCleanup(server.stop)
		extDNS = startExternalDNS(dir, server)
		DeferCleanup(extDNS.stop)
		DeferCleanup(logsOnFailure)

		domain := &dnsv1alpha1.Domain{ObjectMeta: metav1.ObjectMeta{Name: dnsFederation, Namespace: kubefedNS}, Domain: dnsZone}
		Expect(fw.Host.Client.Create(ctx, domain)).To(Succeed())
		DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, domain)) })
		// The Service is federated to both members; the spec plays the
		// cloud provider by giving each member's copy a load-balancer IP.
		memberNames := []string{fw.Members[0].Name, fw.Members[1].Name}
		fns := fedObject("Namespace", dnsNS, dnsNS, map[string]any{}, memberNames, nil)
		Expect(fw.Host.Client.Create(ctx, fns)).To(Succeed())
		fsvc := fedObject("Service", dnsNS, svcName, map[string]any{"spec": map[string]any{
			"type":     "LoadBalancer",
			"selector": map[string]any{"app": svcName},
			"ports":    []any{map[string]any{"name": "http", "port": int64(80)}},
		}}, memberNames, nil)
		Expect(fw.Host.Client.Create(ctx, fsvc)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			_ = fw.Host.Client.Delete(ctx, fsvc)
			Eventually(func() bool { return fedGet(ctx, "Service", dnsNS, svcName) == nil }).WithTimeout(dnsTimeout).Should(BeTrue())
			_ = fw.Host.Client.Delete(ctx, fns)
			Eventually(func() bool { return fedGet(ctx, "Namespace", dnsNS, dnsNS) == nil }).WithTimeout(dnsTimeout).Should(BeTrue())
		})
		for i, m := range fw.Members {
			svc := &corev1.Service{}
			Eventually(func() error {
				return m.Client.Get(ctx, client.ObjectKey{Namespace: dnsNS, Name: svcName}, svc)
			}).WithTimeout(dnsTimeout).Should(Succeed(), "the FederatedService reaches %s", m.Name)
			Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
			Eventually(func() error {
				if err := m.Client.Get(ctx, client.ObjectKey{Namespace: dnsNS, Name: svcName}, svc); err != nil {
					return err
				}
				svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: []string{dnsIP1, dnsIP2}[i]}}
				return m.Client.Status().Update(ctx, svc)
			}).Should(Succeed())
		}
		// Removed first, while the controllers still run.
		DeferCleanup(func(ctx context.Context) error {
			rec := &dnsv1alpha1.ServiceDNSRecord{ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: dnsNS}}
			return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, rec))
		})

		prefix := strings.Join([]string{svcName, dnsNS, dnsFederation, "svc"}, ".")
		names.global = prefix + "." + dnsZone
		names.region1 = strings.Join([]string{prefix, dnsTopology[0].region, dnsZone}, ".")
		names.zone1 = strings.Join([]string{prefix, dnsTopology[0].zone, dnsTopology[0].region, dnsZone}, ".")
		names.region2 = strings.Join([]string{prefix, dnsTopology[1].region, dnsZone}, ".")
		names.zone2 = strings.Join([]string{prefix, dnsTopology[1].zone, dnsTopology[1].region, dnsZone}, ".")
	})

	It("publishes a Service's load-balancer IPs in two members under its global, region and zone names", func(ctx context.Context) {
		// The members run no Pods, so the Services have no ready endpoints.
		rec := &dnsv1alpha1.ServiceDNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: dnsNS},
			Spec:       dnsv1alpha1.ServiceDNSRecordSpec{DomainRef: dnsFederation, RecordTTL: 5, AllowServiceWithoutEndpoints: true},
		}
		Expect(fw.Host.Client.Create(ctx, rec)).To(Succeed())

		Eventually(func() string { return readyReason(ctx, svcName) }).WithTimeout(dnsTimeout).Should(Equal("True/" + dns.ReasonTargetsFound))
		status := record(ctx, svcName).Status
		Expect(status.Domain).To(Equal(dnsZone))
		for i, m := range fw.Members {
			idx := slices.IndexFunc(status.DNS, func(d dnsv1alpha1.ClusterDNS) bool { return d.Cluster == m.Name })
			Expect(idx).NotTo(Equal(-1), "status.dns has no entry of %s: %+v", m.Name, status.DNS)
			d := status.DNS[idx]
			Expect(d.Region).To(Equal(dnsTopology[i].region))
			Expect(d.Zones).To(ContainElement(dnsTopology[i].zone))
			Expect(d.LoadBalancer.Ingress).To(ConsistOf(HaveField("IP", []string{dnsIP1, dnsIP2}[i])))
		}

		ep := &dnsv1alpha1.DNSEndpoint{}
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: dnsNS, Name: "service-" + svcName}, ep)).To(Succeed())
		Expect(metav1.IsControlledBy(ep, record(ctx, svcName))).To(BeTrue(), "the DNSEndpoint is controlled by its record")
		// ExternalDNS read its latest generation (the controller may have
		// written it again since, as member status arrived).
		Eventually(func() string {
			latest := &dnsv1alpha1.DNSEndpoint{}
			if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: dnsNS, Name: "service-" + svcName}, latest); err != nil {
				return err.Error()
			}
			if latest.Status.ObservedGeneration != latest.Generation {
				return fmt.Sprintf("ExternalDNS observed generation %d of %d", latest.Status.ObservedGeneration, latest.Generation)
			}
			return ""
		}).WithTimeout(dnsTimeout).Should(BeEmpty())

		Eventually(answers(ctx, names.global)).WithTimeout(dnsTimeout).WithPolling(time.Second).
			Should(Equal([]string{dnsIP1, dnsIP2}))
		// ExternalDNS applies a change in several updates, so each name is
		// awaited on its own.
		Eventually(answers(ctx, names.region1)).WithTimeout(dnsTimeout).WithPolling(time.Second).Should(Equal([]string{dnsIP1}))
		Eventually(answers(ctx, names.zone1)).WithTimeout(dnsTimeout).WithPolling(time.Second).Should(Equal([]string{dnsIP1}))
		Eventually(answers(ctx, names.region2)).WithTimeout(dnsTimeout).WithPolling(time.Second).Should(Equal([]string{dnsIP2}))
		Eventually(answers(ctx, names.zone2)).WithTimeout(dnsTimeout).WithPolling(time.Second).Should(Equal([]string{dnsIP2}))
	})

	It("drops a member's IP when it stops being ready, and points its zone at the healthy member", func(ctx context.Context) {
		m := fw.Members[1]
		Expect(m.Local.StopAPIServer()).To(Succeed())
		// The apiserver comes back even when the spec fails half-way.
		DeferCleanup(func(ctx context.Context) error {
			if m.Local.ReadyzError(ctx) == nil {
				return nil
			}
			return m.Local.StartAPIServer(ctx)
		})

		Eventually(answers(ctx, names.global)).WithTimeout(dnsTimeout).WithPolling(time.Second).
			Should(Equal([]string{dnsIP1}))
		// The down member's entry stays without targets, so its zone is a
		// CNAME to its region and that to the global name.
		Eventually(answers(ctx, names.zone2)).WithTimeout(dnsTimeout).WithPolling(time.Second).
			Should(Equal([]string{dnsIP1}))
		out, err := server.dig(ctx, names.zone2, "CNAME")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(out)).To(Equal(names.region2 + "."))
		Eventually(answers(ctx, names.region1)).WithTimeout(dnsTimeout).WithPolling(time.Second).Should(Equal([]string{dnsIP1}))

		By("getting the IP back when the member returns")
		Expect(m.Local.StartAPIServer(ctx)).To(Succeed())
		Eventually(answers(ctx, names.global)).WithTimeout(dnsTimeout).WithPolling(time.Second).
			Should(Equal([]string{dnsIP1, dnsIP2}))
		Eventually(answers(ctx, names.zone2)).WithTimeout(dnsTimeout).WithPolling(time.Second).Should(Equal([]string{dnsIP2}))
	})

	It("says why a record has no targets: a missing Domain or a missing Service", func(ctx context.Context) {
		noDomain := &dnsv1alpha1.ServiceDNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: "default"},
			Spec:       dnsv1alpha1.ServiceDNSRecordSpec{DomainRef: "no-such-domain", AllowServiceWithoutEndpoints: true},
		}
		noService := &dnsv1alpha1.ServiceDNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: "no-such-service", Namespace: dnsNS},
			Spec:       dnsv1alpha1.ServiceDNSRecordSpec{DomainRef: dnsFederation},
		}
		for _, rec := range []*dnsv1alpha1.ServiceDNSRecord{noDomain, noService} {
			Expect(fw.Host.Client.Create(ctx, rec)).To(Succeed())
			DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, rec)) })
		}
		Eventually(func() string {
			got := &dnsv1alpha1.ServiceDNSRecord{}
			if err := fw.Host.Client.Get(ctx, client.ObjectKeyFromObject(noDomain), got); err != nil {
				return err.Error()
			}
			if c := meta.FindStatusCondition(got.Status.Conditions, dns.ConditionReady); c != nil {
				return string(c.Status) + "/" + c.Reason
			}
			return "no condition"
		}).WithTimeout(dnsTimeout).Should(Equal("False/" + dns.ReasonDomainNotFound))
		Eventually(func() string { return readyReason(ctx, noService.Name) }).WithTimeout(dnsTimeout).
			Should(Equal("False/" + dns.ReasonServiceNotFound))
		// Their DNSEndpoints exist and are empty: nothing to publish.
		ep := &dnsv1alpha1.DNSEndpoint{}
		Eventually(func() error {
			return fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: dnsNS, Name: "service-" + noService.Name}, ep)
		}).WithTimeout(dnsTimeout).Should(Succeed())
		Expect(ep.Spec.Endpoints).To(BeEmpty())
	})

	It("withdraws the records when the ServiceDNSRecord is deleted", func(ctx context.Context) {
		Expect(fw.Host.Client.Delete(ctx, record(ctx, svcName))).To(Succeed())
		Eventually(func() error {
			return fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: dnsNS, Name: "service-" + svcName}, &dnsv1alpha1.DNSEndpoint{})
		}).WithTimeout(dnsTimeout).Should(WithTransform(apierrors.IsNotFound, BeTrue()),
			"the garbage collector deletes the DNSEndpoint with its record")
		for _, name := range []string{names.global, names.region1, names.zone1, names.region2, names.zone2} {
			Eventually(answers(ctx, name)).WithTimeout(dnsTimeout).WithPolling(time.Second).Should(BeEmpty(), name)
		}
	})
})

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
