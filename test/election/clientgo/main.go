// Command election-clientgo is the client-go side of Steadfast's election
// interop tests: a candidate that campaigns for the same Lease with
// k8s.io/client-go/tools/leaderelection (RunOrDie, LeaseLock,
// ReleaseOnCancel), as Go controllers do. It prints the same lines as the C
// candidate (test/election/candidate.c), each starting with CLOCK_MONOTONIC
// in milliseconds, so one test can compare both:
//
//	<ms> START id=<identity> pid=<pid>
//	<ms> NEW_LEADER leader=<identity>
//	<ms> LEADING term=<n>
//	<ms> STOPPED term=<n> reason=<text>
//	<ms> WRITE ok|error n=<count>
//	<ms> RENEWED at=<ms>     (with --print-renews: each successful write of
//	                          the record while holding it, acquire included;
//	                          at = when the request was sent)
//	<ms> RELEASED err=0
//	<ms> EXIT
//
// After losing the lease it campaigns again (a new RunOrDie). SIGTERM or
// SIGINT cancels the context: client-go then releases the lease and the
// program exits 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

var outMu sync.Mutex

func monoMs() float64 {
	var ts syscall.Timespec
	// CLOCK_MONOTONIC = 1: the same clock as the C candidate's sf_mono_ns
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec)*1e3 + float64(ts.Nsec)/1e6
}

func out(format string, args ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintf(os.Stdout, "%.3f %s\n", monoMs(), fmt.Sprintf(format, args...))
	os.Stdout.Sync()
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig path")
	ns := flag.String("namespace", "", "Lease namespace")
	name := flag.String("name", "", "Lease name")
	identity := flag.String("identity", "", "holder identity (default: hostname_pid)")
	leaseMs := flag.Int("lease-duration", 15000, "lease duration, ms")
	renewMs := flag.Int("renew-deadline", 10000, "renew deadline, ms")
	retryMs := flag.Int("retry-period", 2000, "retry period, ms")
	workCM := flag.String("work-configmap", "", "ConfigMap to patch while leading")
	workMs := flag.Int("work-interval", 100, "leader work interval, ms")
	printRenews := flag.Bool("print-renews", false, "print each successful renew")
	dieWithParent := flag.Bool("die-with-parent", false, "get SIGKILL when the parent dies")
	flag.Parse()
	if *dieWithParent {
		syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	}
	if *ns == "" || *name == "" {
		fmt.Fprintln(os.Stderr, "usage: election-clientgo --namespace NS --name LEASE [flags]")
		os.Exit(2)
	}
	if *identity == "" {
		h, _ := os.Hostname()
		*identity = fmt.Sprintf("%s_%d", h, os.Getpid())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(1)
	}
	cfg.UserAgent = "election-clientgo/" + *identity
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}

	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		cancel()
	}()

	out("START id=%s pid=%d", *identity, os.Getpid())
	term := 0
	for ctx.Err() == nil {
		leading := false
		var lock resourcelock.Interface = &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: *ns, Name: *name},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: *identity},
		}
		if *printRenews {
			lock = renewPrinter{lock}
		}
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			Name:            *name,
			LeaseDuration:   time.Duration(*leaseMs) * time.Millisecond,
			RenewDeadline:   time.Duration(*renewMs) * time.Millisecond,
			RetryPeriod:     time.Duration(*retryMs) * time.Millisecond,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					term++
					leading = true
					out("LEADING term=%d", term)
					if *workCM != "" {
						work(lctx, cs, *ns, *workCM, *identity, time.Duration(*workMs)*time.Millisecond)
					}
				},
				OnStoppedLeading: func() {
					if leading {
						reason := "lease lost"
						if ctx.Err() != nil {
							reason = "releasing the lease"
						}
						out("STOPPED term=%d reason=%s", term, reason)
					}
				},
				OnNewLeader: func(id string) {
					out("NEW_LEADER leader=%s", id)
				},
			},
		})
	}
	// RunOrDie released the lease (ReleaseOnCancel) before returning
	out("RELEASED err=0")
	out("EXIT")
}

// renewPrinter wraps a lock and prints each successful Create or Update
// that holds the lease (the release, which clears the holder, is not a
// renew), stamped with the time the request was sent.
type renewPrinter struct {
	resourcelock.Interface
}

func (r renewPrinter) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	t := monoMs()
	err := r.Interface.Create(ctx, ler)
	if err == nil && ler.HolderIdentity != "" {
		out("RENEWED at=%.3f", t)
	}
	return err
}

func (r renewPrinter) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	t := monoMs()
	err := r.Interface.Update(ctx, ler)
	if err == nil && ler.HolderIdentity != "" {
		out("RENEWED at=%.3f", t)
	}
	return err
}

// work patches a ConfigMap every interval until the leader context ends.
func work(ctx context.Context, cs *kubernetes.Clientset, ns, cm, id string, every time.Duration) {
	n := 0
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n++
		patch := fmt.Sprintf(`{"data":{"writer":%q,"n":"%d"}}`, id, n)
		_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, cm, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: cm},
				Data:       map[string]string{"writer": id},
			}, metav1.CreateOptions{})
		}
		if err != nil {
			out("WRITE error n=%d err=%v", n, err)
		} else {
			out("WRITE ok n=%d", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
