package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// AgentArgs are the arguments with which a Pull-mode member's agent runs
// as a local process exactly as the Deployment d in member would run it:
// the Deployment's own arguments, the host kubeconfig from the Secret its
// Pod mounts (written into dir), and for the member the token of the Pod's
// ServiceAccount instead of the in-cluster configuration. $(POD_NAME) is
// identity; the metrics and health endpoints are off. The first argument
// is "agent": run bin/controller-manager with them.
func AgentArgs(ctx context.Context, member *Cluster, d *appsv1.Deployment, dir, identity string) ([]string, error) {
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || len(pod.Containers[0].VolumeMounts) != 1 {
		return nil, errors.New("the agent's Deployment should run one container with one mounted Secret")
	}
	vol, mount := pod.Volumes[0].Secret, pod.Containers[0].VolumeMounts[0]
	secret, err := member.Kube.CoreV1().Secrets(d.Namespace).Get(ctx, vol.SecretName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the Secret the agent mounts: %w", err)
	}
	files := map[string]string{}
	for _, item := range vol.Items {
		local := filepath.Join(dir, "host-"+filepath.Base(item.Path))
		if err := os.WriteFile(local, secret.Data[item.Key], 0o600); err != nil {
			return nil, err
		}
		files[filepath.Join(mount.MountPath, item.Path)] = local
	}
	token, err := member.Kube.CoreV1().ServiceAccounts(d.Namespace).CreateToken(ctx, pod.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("a token of the agent's ServiceAccount %s: %w", pod.ServiceAccountName, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["member"] = &clientcmdapi.Cluster{Server: member.Config.Host, CertificateAuthorityData: member.Config.CAData}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kc.Contexts["agent"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: "agent"}
	kc.CurrentContext = "agent"
	memberKC := filepath.Join(dir, "member.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, memberKC); err != nil {
		return nil, err
	}
	var args []string
	for _, a := range pod.Containers[0].Args {
		name, value, _ := strings.Cut(a, "=")
		switch {
		case name == "--metrics-addr" || name == "--health-addr":
			a = name + "=0"
		case files[value] != "":
			a = name + "=" + files[value]
		}
		args = append(args, strings.ReplaceAll(a, "$(POD_NAME)", identity))
	}
	return append(args, "--kubeconfig="+memberKC), nil
}
