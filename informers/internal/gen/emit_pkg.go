package gen

import (
	"fmt"
	"strings"
)

// packageDoc is the documentation of a generated package mirroring pkg,
// wrapped at 72 columns.
func packageDoc(pkg, name, what string) string {
	var b strings.Builder
	line := "//"
	for _, word := range strings.Fields(fmt.Sprintf("Package %s is %s as this module's: %s", name, pkg, what)) {
		if len(line)+1+len(word) > 72 && line != "//" {
			b.WriteString(line + "\n")
			line = "//"
		}
		line += " " + word
	}
	b.WriteString(line + "\n")
	return b.String()
}

// emitInternal writes internalinterfaces: client-go's types, as aliases.
func emitInternal(src *pkgSource) (*writer, error) {
	types, funcs, err := src.exported()
	if err != nil {
		return nil, err
	}
	if len(funcs) > 0 {
		return nil, fmt.Errorf("%s: exported function %s is not handled", src.path, funcs[0].fd.Name.Name)
	}
	w := newWriter(src.path, packageDoc(src.path, src.name,
		"its types are client-go's own (aliases), so a factory or tweak function of either module is one of the other's."), src.name)
	return w, w.emitAliases(src, types)
}

// emitNew writes the package's New (client-go's signature) returning
// &<impl>{factory, namespace, tweakListOptions}, with impl's type.
func (w *writer) emitNew(funcs []funcDecl, impl, doc string) error {
	var found bool
	for _, d := range funcs {
		if d.fd.Name.Name != "New" {
			continue
		}
		sig, err := w.signatureOf(d)
		if err != nil {
			return err
		}
		if len(sig.params) != 3 {
			return fmt.Errorf("New: want (factory, namespace, tweakListOptions), got %s", sig)
		}
		found = true
		ii := w.use(clientGoModule + "/informers/internalinterfaces")
		w.printf("type %s struct {\n\tfactory %s.SharedInformerFactory\n\tnamespace string\n\ttweakListOptions %s.TweakListOptionsFunc\n}\n\n", impl, ii, ii)
		w.printf("%sfunc New%s {\n\treturn &%s{factory: %s, namespace: %s, tweakListOptions: %s}\n}\n\n",
			doc, sig, impl, sig.params[0].name, sig.params[1].name, sig.params[2].name)
	}
	if !found {
		return fmt.Errorf("no New")
	}
	return nil
}

// emitGroupPkg writes a group package: its Interface (client-go's), and
// New whose versions are ours.
func emitGroupPkg(g group) (*writer, error) {
	types, funcs, err := g.src.exported()
	if err != nil {
		return nil, err
	}
	for _, d := range funcs {
		if d.fd.Name.Name != "New" {
			return nil, fmt.Errorf("%s: exported function %s is not handled", g.pkg, d.fd.Name.Name)
		}
	}
	w := newWriter(g.pkg, packageDoc(g.pkg, g.src.name,
		"New's versions hand out this module's informers; Interface is client-go's."), g.src.name)
	if err := w.emitAliases(g.src, types); err != nil {
		return nil, err
	}
	doc := "// New returns the group's versions on f, for namespace and with tweakListOptions;\n// their informers are this module's.\n"
	if err := w.emitNew(funcs, "group", doc); err != nil {
		return nil, fmt.Errorf("%s: %w", g.pkg, err)
	}
	for _, v := range g.versions {
		vp := w.use(ours(v.pkg))
		w.printf("// %s returns the group's %s informers, this module's.\n", v.method, v.method)
		w.printf("func (g *group) %s() %s.Interface { return %s.New(g.factory, g.namespace, g.tweakListOptions) }\n\n", v.method, vp, vp)
	}
	return w, nil
}

// form is which of a kind's exported functions a function is.
type form int

const (
	formPlain         form = iota // New<Kind>Informer
	formTyped                     // NewTyped<Kind>Informer
	formFiltered                  // NewFiltered<Kind>Informer
	formTypedFiltered             // NewTypedFiltered<Kind>Informer
	formOptions                   // New<Kind>InformerWithOptions
	formTypedOptions              // NewTyped<Kind>InformerWithOptions
	formToTyped                   // ToTyped<Kind>Informer
	formToIndex                   // To<Kind>IndexInformer
)

// kindFuncs maps each exported function name a version package's kinds
// have in client-go to its kind and form.
func kindFuncs(v version) map[string]struct {
	kind string
	form form
} {
	out := map[string]struct {
		kind string
		form form
	}{}
	for k := range v.kinds {
		names := map[form]string{
			formPlain:         "New" + k + "Informer",
			formTyped:         "NewTyped" + k + "Informer",
			formFiltered:      "NewFiltered" + k + "Informer",
			formTypedFiltered: "NewTypedFiltered" + k + "Informer",
			formOptions:       "New" + k + "InformerWithOptions",
			formTypedOptions:  "NewTyped" + k + "InformerWithOptions",
			formToTyped:       "ToTyped" + k + "Informer",
			formToIndex:       "To" + k + "IndexInformer",
		}
		for f, n := range names {
			out[n] = struct {
				kind string
				form form
			}{k, f}
		}
	}
	return out
}

// kindVar is the generated variable describing kind.
func kindVar(kind string) string { return "kind" + kind }

// emitVersionPkg writes a version package: client-go's types as aliases,
// New with accessors on the factory's InformerFor, and every
// constructor of client-go's with its signature, building ours.
func emitVersionPkg(v version) (*writer, error) {
	types, funcs, err := v.src.exported()
	if err != nil {
		return nil, err
	}
	w := newWriter(v.pkg, packageDoc(v.pkg, v.src.name,
		"New's accessors and every constructor (New<Kind>Informer, NewFiltered<Kind>Informer, their typed and WithOptions variants) build this module's informers; interfaces, listers and every other type are client-go's (aliases), so values cross both ways."), v.src.name)
	if err := w.emitAliases(v.src, types); err != nil {
		return nil, err
	}
	doc := "// New returns the version's informers on f, for namespace and with\n// tweakListOptions; they are this module's.\n"
	if err := w.emitNew(funcs, "version", doc); err != nil {
		return nil, fmt.Errorf("%s: %w", v.pkg, err)
	}
	for _, r := range v.resources {
		w.printf("// %s returns the factory's %s informer, this module's.\n", r.method, r.kind)
		w.printf("func (v *version) %s() %s { return %s.Accessor(v.factory, v.namespace, v.tweakListOptions) }\n\n", r.method, r.iface, kindVar(r.kind))
	}
	byName := kindFuncs(v)
	declared := map[string]bool{}
	for _, d := range funcs {
		name := d.fd.Name.Name
		if name == "New" {
			continue
		}
		kf, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("%s: exported function %s is not handled", v.pkg, name)
		}
		r := v.kinds[kf.kind]
		if !declared[kf.kind] {
			declared[kf.kind] = true
			w.emitKind(r)
		}
		if err := w.emitKindFunc(d, r, kf.form); err != nil {
			return nil, fmt.Errorf("%s: %w", v.pkg, err)
		}
	}
	for k := range v.kinds {
		if !declared[k] {
			return nil, fmt.Errorf("%s: kind %s has no exported constructor", v.pkg, k)
		}
	}
	for _, r := range v.resources {
		if !declared[r.kind] {
			return nil, fmt.Errorf("%s: accessor %s has no kind", v.pkg, r.method)
		}
	}
	return w, nil
}

// emitKind writes the typed.Kind variable of resource r.
func (w *writer) emitKind(r resource) {
	api := w.use(r.objPkg)
	lst := w.use(r.listerPkg)
	typed := w.use(typedPkg)
	ns, nsArg := "_", ""
	if r.namespaced {
		ns, nsArg = "namespace", "namespace"
	}
	w.printf("// %s is the %s resource, for this module's constructors.\n", kindVar(r.kind), r.kind)
	w.printf("var %s = &%s.Kind[*%s.%s, %sIndexInformer, %s.%s, *%s.%sList]{\n", kindVar(r.kind), typed, api, r.kind, r.kind, lst, r.listerType, api, r.kind)
	w.printf("\tGVR: %s.GroupVersionResource{Group: %q, Version: %q, Resource: %q},\n", w.use("k8s.io/apimachinery/pkg/runtime/schema"), r.gvr[0], r.gvr[1], r.gvr[2])
	w.printf("\tClient: func(client %s.Interface, %s string) %s.Client[*%s.%sList] { return client.%s().%s(%s) },\n",
		w.use(clientGoModule+"/kubernetes"), ns, typed, api, r.kind, r.clientGroup, r.clientRes, nsArg)
	w.printf("\tLister: %s.%s,\n}\n\n", lst, r.listerFunc)
}

// emitKindFunc writes one of a kind's exported functions with client-go's
// signature; the body maps its parameters (by position: the client, the
// namespace if the resource is namespaced, then the resync period and
// indexers, or the options) onto the kind's.
func (w *writer) emitKindFunc(d funcDecl, r resource, f form) error {
	name := d.fd.Name.Name
	sig, err := w.signatureOf(d)
	if err != nil {
		return err
	}
	ps := sig.params
	kv := kindVar(r.kind)
	ns, rest := `""`, 1
	if r.namespaced && f != formToTyped && f != formToIndex {
		if len(ps) < 2 || ps[1].typ != "string" {
			return fmt.Errorf("%s: the resource is namespaced, but the signature is %s", name, sig)
		}
		ns, rest = ps[1].name, 2
	}
	want := map[form]int{
		formPlain: rest + 2, formTyped: rest + 2, formFiltered: rest + 3, formTypedFiltered: rest + 3,
		formOptions: rest + 1, formTypedOptions: rest + 1, formToTyped: 1, formToIndex: 1,
	}[f]
	if len(ps) != want {
		return fmt.Errorf("%s: unexpected signature %s", name, sig)
	}
	var body string
	switch f {
	case formPlain, formTyped, formFiltered, formTypedFiltered:
		indexers := ps[rest+1].name
		method := "Informer"
		if f == formTyped || f == formTypedFiltered {
			indexers = w.use(clientGoModule+"/tools/cache") + ".TypedIndexersToIndexers(" + indexers + ")"
			method = "Typed"
		}
		opts := fmt.Sprintf("%s.InformerOptions{ResyncPeriod: %s, Indexers: %s", w.use(clientGoModule+"/informers/internalinterfaces"), ps[rest].name, indexers)
		if f == formFiltered || f == formTypedFiltered {
			opts += ", TweakListOptions: " + ps[rest+2].name
		}
		body = fmt.Sprintf("return %s.%s(%s, %s, %s})", kv, method, ps[0].name, ns, opts)
	case formOptions:
		body = fmt.Sprintf("return %s.Informer(%s, %s, %s)", kv, ps[0].name, ns, ps[rest].name)
	case formTypedOptions:
		body = fmt.Sprintf("return %s.Typed(%s, %s, %s)", kv, ps[0].name, ns, ps[rest].name)
	case formToTyped:
		body = fmt.Sprintf("if t, ok := %s.(%s); ok {\n\t\treturn t\n\t}\n\treturn %s.Adapt(%s)", ps[0].name, sig.result, kv, ps[0].name)
	case formToIndex:
		body = fmt.Sprintf("return %s.IndexInformer[*%s.%s, %s](%s)", w.use(typedPkg), w.use(r.objPkg), r.kind, sig.result, ps[0].name)
	}
	w.printf("// %s is client-go's %s.\n", name, strings.TrimSpace(formDoc[f]))
	w.printf("func %s%s {\n\t%s\n}\n\n", name, sig, body)
	return nil
}

// formDoc completes each function's documentation.
var formDoc = map[form]string{
	formPlain:         "constructor, building this module's informer",
	formTyped:         "constructor, building this module's informer",
	formFiltered:      "constructor, building this module's informer",
	formTypedFiltered: "constructor, building this module's informer",
	formOptions:       "constructor, building this module's informer",
	formTypedOptions:  "constructor, building this module's informer",
	formToTyped:       "conversion; the typed informer of an untyped one keeps its health methods",
	formToIndex:       "conversion; the result keeps the health methods of an informer of this module",
}
