// Command ocimage assembles container images from prepared layer tarballs and
// writes each as an image tarball (the `docker save` layout that
// `crossplane xpkg build --embed-runtime-image-tarball` reads), with
// go-containerregistry: the library behind crane and the Crossplane CLI's own
// package code.
//
//	ocimage SPEC.json > SUMMARY.json
//
// SPEC names the images to write, and optionally an OCI image layout
// directory to write all of them into as well (each blob once, each image
// named by an org.opencontainers.image.ref.name annotation):
//
//	{"created": UNIX_SECONDS, "architecture": "amd64", "layout": "DIR",
//	 "images": [{"out": "a.tar", "tag": "registry/repo:tag",
//	             "layers": [{"path": "base.tar.gz", "history": "what made it"}, ...],
//	             "config": {"Entrypoint": [...], "User": "65532", ...}}]}
//
// Layers are gzip-compressed tarballs, used byte for byte, and a layer that
// several images share is read once. Everything the image config records
// comes from SPEC, the creation time included, so the same inputs give the
// same image digest. SUMMARY lists each image's digest, config digest and
// layers (digest, diff ID, compressed size).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	specsv1 "github.com/opencontainers/image-spec/specs-go/v1"
)

type spec struct {
	Created      *int64      `json:"created"`
	Architecture string      `json:"architecture"`
	Layout       string      `json:"layout"`
	Images       []imageSpec `json:"images"`
}

type imageSpec struct {
	Out    string      `json:"out"`
	Tag    string      `json:"tag"`
	Layers []layerSpec `json:"layers"`
	Config v1.Config   `json:"config"`
}

type layerSpec struct {
	Path    string `json:"path"`
	History string `json:"history"`
}

type layerSummary struct {
	Digest  string `json:"digest"`
	DiffID  string `json:"diffID"`
	Size    int64  `json:"size"`
	History string `json:"history"`
}

type imageSummary struct {
	File   string         `json:"file"`
	Tag    string         `json:"tag"`
	Digest string         `json:"digest"`
	Config string         `json:"config"`
	Layers []layerSummary `json:"layers"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: ocimage SPEC.json > SUMMARY.json")
		os.Exit(2)
	}
	summaries, err := run(os.Args[1])
	if err == nil {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(summaries)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ocimage: %v\n", err)
		os.Exit(1)
	}
}

func run(path string) ([]imageSummary, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Created == nil || s.Architecture == "" || len(s.Images) == 0 {
		return nil, fmt.Errorf("%s: created, architecture and at least one image are required", path)
	}
	when := v1.Time{Time: time.Unix(*s.Created, 0).UTC()}
	var oci *layout.Path
	if s.Layout != "" {
		p, err := layout.Write(s.Layout, empty.Index)
		if err != nil {
			return nil, fmt.Errorf("layout %s: %w", s.Layout, err)
		}
		oci = &p
	}
	layers := map[string]v1.Layer{} // by path: a shared layer is hashed once
	out := make([]imageSummary, 0, len(s.Images))
	for _, is := range s.Images {
		img, err := build(is, s.Architecture, when, layers)
		if err == nil && oci != nil {
			err = oci.AppendImage(img, layout.WithAnnotations(map[string]string{specsv1.AnnotationRefName: is.Tag}))
		}
		var sum imageSummary
		if err == nil {
			sum, err = describe(is, img)
		}
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", is.Tag, err)
		}
		out = append(out, sum)
	}
	return out, nil
}

// build assembles one image and writes its tarball.
func build(is imageSpec, arch string, when v1.Time, layers map[string]v1.Layer) (v1.Image, error) {
	if is.Out == "" || len(is.Layers) == 0 || len(is.Config.Entrypoint) == 0 {
		return nil, fmt.Errorf("out, layers and config.Entrypoint are required")
	}
	ref, err := name.ParseReference(is.Tag)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	adds := make([]mutate.Addendum, 0, len(is.Layers))
	for _, ls := range is.Layers {
		l, ok := layers[ls.Path]
		if !ok {
			if l, err = tarball.LayerFromFile(ls.Path, tarball.WithMediaType(types.OCILayer)); err != nil {
				return nil, fmt.Errorf("layer %s: %w", ls.Path, err)
			}
			layers[ls.Path] = l
		}
		adds = append(adds, mutate.Addendum{
			Layer:     l,
			History:   v1.History{Created: when, CreatedBy: ls.History},
			MediaType: types.OCILayer,
		})
	}
	if img, err = mutate.Append(img, adds...); err != nil {
		return nil, err
	}
	// Append recorded the layers' diff IDs and history; the rest is ours.
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = when
	cf.OS = "linux"
	cf.Architecture = arch
	cf.Config = is.Config
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	if err := tarball.WriteToFile(is.Out, ref, img); err != nil {
		return nil, fmt.Errorf("write %s: %w", is.Out, err)
	}
	return img, nil
}

func describe(is imageSpec, img v1.Image) (imageSummary, error) {
	digest, err := img.Digest()
	if err != nil {
		return imageSummary{}, err
	}
	config, err := img.ConfigName()
	if err != nil {
		return imageSummary{}, err
	}
	ls, err := img.Layers()
	if err != nil {
		return imageSummary{}, err
	}
	s := imageSummary{File: filepath.Base(is.Out), Tag: is.Tag, Digest: digest.String(), Config: config.String()}
	for i, l := range ls {
		d, err := l.Digest()
		if err != nil {
			return imageSummary{}, err
		}
		diff, err := l.DiffID()
		if err != nil {
			return imageSummary{}, err
		}
		size, err := l.Size()
		if err != nil {
			return imageSummary{}, err
		}
		s.Layers = append(s.Layers, layerSummary{Digest: d.String(), DiffID: diff.String(), Size: size, History: is.Layers[i].History})
	}
	return s, nil
}
