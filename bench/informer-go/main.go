// Command informer-go is the client-go side of Steadfast's informer
// benchmark: a dynamic (unstructured) shared informer on one custom resource,
// as a Go controller for a CRD would run it. It prints one JSON line with the
// time to synced, the time to observe a burst of updates and the peak RSS,
// the same fields as Steadfast's C program, so tools/bench.sh can compare.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func peakRSSKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "VmHWM:") {
			var v int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(s.Text(), "VmHWM:")), "%d", &v)
			return v
		}
	}
	return -1
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig path")
	group := flag.String("group", "", "API group")
	version := flag.String("version", "v1", "API version")
	resource := flag.String("resource", "", "plural resource")
	namespace := flag.String("namespace", "", "namespace (empty = all)")
	expect := flag.Int("expect", 0, "objects expected at sync")
	updates := flag.Int("updates", 0, "updates to wait for after sync")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after")
	strip := flag.String("strip-managed-fields", "false", "drop metadata.managedFields before caching (a transform)")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(1)
	}
	// Same client-side limits as Steadfast's client defaults.
	cfg.QPS = 20
	cfg.Burst = 30
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
	gvr := schema.GroupVersionResource{Group: *group, Version: *version, Resource: *resource}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, *namespace, nil)
	inf := f.ForResource(gvr).Informer()
	impl := "client-go"
	if *strip == "true" {
		impl = "client-go+strip"
		// What controller-runtime's TransformStripManagedFields does.
		if err := inf.SetTransform(func(o interface{}) (interface{}, error) {
			if u, ok := o.(*unstructured.Unstructured); ok {
				u.SetManagedFields(nil)
			}
			return o, nil
		}); err != nil {
			fmt.Fprintln(os.Stderr, "transform:", err)
			os.Exit(1)
		}
	}
	var updatesSeen atomic.Int64
	var firstUpdate, lastUpdate atomic.Int64
	done := make(chan struct{})
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj interface{}) {
			u, ok := newObj.(*unstructured.Unstructured)
			if !ok {
				return
			}
			if _, found, _ := unstructured.NestedString(u.Object, "spec", "round"); !found {
				return
			}
			now := time.Now().UnixNano()
			firstUpdate.CompareAndSwap(0, now)
			lastUpdate.Store(now)
			if updatesSeen.Add(1) == int64(*updates) {
				close(done)
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		fmt.Fprintln(os.Stderr, "informer did not sync")
		os.Exit(1)
	}
	syncS := time.Since(start).Seconds()
	n := len(inf.GetStore().List())
	if *expect > 0 && n != *expect {
		fmt.Fprintf(os.Stderr, "synced %d objects, expected %d\n", n, *expect)
		os.Exit(1)
	}
	rssSynced := peakRSSKiB()
	fmt.Println("SYNCED") // the driver starts the update burst on this line
	os.Stdout.Sync()
	burstS := 0.0
	if *updates > 0 {
		select {
		case <-done:
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "saw %d of %d updates\n", updatesSeen.Load(), *updates)
			os.Exit(1)
		}
		burstS = float64(lastUpdate.Load()-firstUpdate.Load()) / 1e9
	}
	out, _ := json.Marshal(map[string]interface{}{
		"impl": impl, "objects": n, "sync_s": syncS, "updates": updatesSeen.Load(),
		"burst_s": burstS, "peak_rss_kib_synced": rssSynced, "peak_rss_kib": peakRSSKiB(),
	})
	fmt.Println(string(out))
}
