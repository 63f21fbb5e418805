"""Program generation: the template catalog, its parameters and rendering (`catalog`), and `lfrl new`'s
project questions (`project`). The templates and the LF library reactors are its data packages,
`generator.templates` (templates/ in the source tree) and `generator.library` (lf/lib/)."""
