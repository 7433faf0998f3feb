// Command crictl is the part of cri-tools' crictl that kind and people
// debugging a node use, for the offline kind node image: cri-tools is not
// published as a Go module, so the image cannot carry the real one. It talks
// CRI over containerd's socket like crictl does and answers
//
//	crictl version
//	crictl images [-q]        (kind export logs)
//	crictl inspecti IMAGE     (kind load docker-image: status.id, status.repoTags)
//	crictl ps [-a]
//	crictl pods
//
// Anything else is refused with a pointer to ctr, which the node has.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"
)

const defaultEndpoint = "unix:///run/containerd/containerd.sock"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "crictl: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: crictl version | images [-q] | inspecti IMAGE | ps [-a] | pods")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt, img := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	w := tabwriter.NewWriter(os.Stdout, 0, 8, 3, ' ', 0)
	defer w.Flush()
	switch cmd, rest := args[0], args[1:]; cmd {
	case "version":
		v, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "Version:  %s\nRuntimeName:  %s\nRuntimeVersion:  %s\nRuntimeApiVersion:  %s\n", v.Version, v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion)
	case "images":
		resp, err := img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		if err != nil {
			return err
		}
		quiet := len(rest) > 0 && rest[0] == "-q"
		if !quiet {
			fmt.Fprintln(w, "IMAGE\tTAG\tIMAGE ID\tSIZE")
		}
		for _, i := range resp.Images {
			if quiet {
				fmt.Fprintln(w, i.Id)
				continue
			}
			for _, t := range i.RepoTags {
				repo, tag := t, "<none>"
				if at := strings.LastIndex(t, ":"); at > strings.LastIndex(t, "/") {
					repo, tag = t[:at], t[at+1:]
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%dMB\n", repo, tag, short(i.Id), i.Size/1e6)
			}
		}
	case "inspecti":
		if len(rest) != 1 {
			return errors.New("inspecti takes one image")
		}
		resp, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: rest[0]}})
		if err != nil {
			return err
		}
		if resp.Image == nil {
			return fmt.Errorf("no such image %q present", rest[0])
		}
		out, err := json.MarshalIndent(map[string]any{"status": map[string]any{
			"id": resp.Image.Id, "repoTags": resp.Image.RepoTags, "repoDigests": resp.Image.RepoDigests,
			"size": fmt.Sprint(resp.Image.Size), "pinned": resp.Image.Pinned,
		}}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(w, string(out))
	case "ps":
		filter := &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
		if len(rest) > 0 && rest[0] == "-a" {
			filter = nil
		}
		resp, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "CONTAINER\tIMAGE\tCREATED\tSTATE\tNAME\tATTEMPT\tPOD ID")
		for _, c := range resp.Containers {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", short(c.Id), c.Image.GetImage(), age(c.CreatedAt), strings.TrimPrefix(c.State.String(), "CONTAINER_"),
				c.Metadata.GetName(), c.Metadata.GetAttempt(), short(c.PodSandboxId))
		}
	case "pods":
		resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "POD ID\tCREATED\tSTATE\tNAME\tNAMESPACE\tATTEMPT")
		for _, p := range resp.Items {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\n", short(p.Id), age(p.CreatedAt), strings.TrimPrefix(p.State.String(), "SANDBOX_"),
				p.Metadata.GetName(), p.Metadata.GetNamespace(), p.Metadata.GetAttempt())
		}
	default:
		return fmt.Errorf("%q is not one of the commands this crictl has (version, images, inspecti, ps, pods); for anything else use ctr --namespace=k8s.io", cmd)
	}
	return nil
}

// endpoint is the runtime endpoint from /etc/crictl.yaml, as crictl reads it.
func endpoint() string {
	if data, err := os.ReadFile("/etc/crictl.yaml"); err == nil {
		var cfg struct {
			RuntimeEndpoint string `json:"runtime-endpoint"`
		}
		if yaml.Unmarshal(data, &cfg) == nil && cfg.RuntimeEndpoint != "" {
			return cfg.RuntimeEndpoint
		}
	}
	return defaultEndpoint
}

func short(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

func age(createdNanos int64) string {
	return time.Since(time.Unix(0, createdNanos)).Round(time.Second).String() + " ago"
}
