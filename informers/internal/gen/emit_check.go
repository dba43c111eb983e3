package gen

// emitCheck writes informers/zz_generated_test.go: for every exported
// function and type of client-go's internalinterfaces, group and version
// packages, read from client-go's source independently of what the
// packages' emitters wrote, a call that compiles only if ours exists with
// the identical type (a function's exact signature; a type that is
// client-go's own).
func emitCheck(m *model) (*writer, error) {
	w := newWriter(clientGoModule+"/informers", "", "informers_test")
	w.printf("// sameType compiles only if ours and theirs have one type.\n")
	w.printf("func sameType[T any](ours, theirs T) {}\n\n")
	w.printf("// Every exported function of client-go's informers packages is ours with\n")
	w.printf("// the identical signature, and every exported type is client-go's.\n")
	w.printf("func TestClientGoNamesHaveTheirTypes(%s *%s.T) {\n", "t", w.use("testing"))
	pkgs := []*pkgSource{m.internal}
	for _, g := range m.groups {
		pkgs = append(pkgs, g.src)
		for _, v := range g.versions {
			pkgs = append(pkgs, v.src)
		}
	}
	var n int
	for _, p := range pkgs {
		types, funcs, err := p.exported()
		if err != nil {
			return nil, err
		}
		theirs, our := w.use(p.path), w.use(ours(p.path))
		w.printf("\n\t// %s\n", relDir(p.path))
		for _, f := range funcs {
			w.printf("\tsameType(%s.%s, %s.%s)\n", our, f.fd.Name.Name, theirs, f.fd.Name.Name)
			n++
		}
		for _, t := range types {
			w.printf("\tsameType((*%s.%s)(nil), (*%s.%s)(nil))\n", our, t.name, theirs, t.name)
			n++
		}
	}
	w.printf("\tt.Logf(\"%%d names\", %d)\n}\n", n)
	return w, nil
}
