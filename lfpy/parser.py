"""Recursive-descent parser for LF files with the Python target.

One method per rule of the official grammar (`LinguaFranca.xtext`), named after it, so that the
two can be read side by side. The first syntax error raises `LfError` with its position.

Like LF, the parser reserves the grammar's keywords (`lexer.KEYWORDS`): a port named `after` or an
instance named `mode` is an error here as it is for `lfc`, so that what lfpy accepts `lfc` accepts.
"""

from __future__ import annotations

from pathlib import Path

from lfpy import ast
from lfpy.ast import Loc
from lfpy.diagnostics import Diagnostic, LfError
from lfpy.lexer import KEYWORDS, Lexer, Token
from lfpy.runtime.tag import NS_PER_UNIT

# Every spelling of a time unit that LF accepts.
TIME_UNITS = frozenset(NS_PER_UNIT)
_BOOLEANS = {"true": True, "True": True, "false": False, "False": False}
_CLOSERS = {"{": "}", "[": "]", "(": ")"}
# Tokens that may follow a number on its line without making it a time (`0 s = new B()` is not).
_NOT_A_UNIT_AFTER = frozenset({"=", ".", "->", "~>"})
_MEMBERS = ("state, method, input, output, timer, action, reaction, watchdog, mode, an instance "
            "'x = new C()' or a connection 'a.x -> b.y'")
_MODE_MEMBERS = ("state, timer, action, reaction, watchdog, an instance 'x = new C()' or a connection "
                 "'a.x -> b.y'")


def parse(text: str, path: str) -> ast.Model:
    """Parse one LF file's text; raise LfError at the first syntax error."""
    parser = Parser(text, path)
    try:
        return parser.parse_model()
    except RecursionError:
        raise parser.error("expressions nested too deeply") from None


def decode_source(data: bytes, path: str) -> tuple[str, Diagnostic | None]:
    """The text of an LF file's bytes (UTF-8, a leading byte-order mark dropped).

    When the bytes are not UTF-8, returns the text before the first bad byte and a diagnostic there.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode("utf-8")
        loc = Lexer(good, path).loc(len(good), len(good) + 1)
        return good, Diagnostic("error", f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})", loc)


def parse_file(path: str) -> ast.Model:
    """Read (UTF-8) and parse one LF file; a file that cannot be read is an LfError too."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise LfError(Diagnostic("error", f"cannot read file: {exc.strerror or exc}", Loc(path, 1, 1))) from None
    text, problem = decode_source(data, path)
    if problem is not None:
        raise LfError(problem)
    return parse(text, path)


def _show(text: str, limit: int = 24) -> str:
    """`text` quoted for a message: printable, short."""
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                    for c in text[:limit])
    return shown + ("..." if len(text) > limit else "")


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "end of file"
    if tok.kind == "code":
        return "a code block '{= ... =}'"
    if tok.kind == "string":
        return f'the string "{_show(tok.text)}"'
    if tok.kind == "char":
        return f"the character '{_show(tok.text)}'"
    return f"'{_show(tok.text)}'"


class Parser:
    def __init__(self, text: str, path: str) -> None:
        self.lexer = Lexer(text, path)
        self.path = path
        self.toks = self.lexer.tokens()
        self.i = 0

    # ------------------------------------------------------------ token helpers

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def advance(self) -> Token:
        tok = self.toks[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def loc(self, tok: Token | None = None) -> Loc:
        tok = tok or self.tok
        return Loc(self.path, tok.line, tok.col, tok.offset, tok.end)

    def span(self, start: Loc) -> Loc:
        """`start` extended to the end of the last consumed token."""
        prev = self.toks[self.i - 1] if self.i else self.tok
        return Loc(start.file, start.line, start.col, start.offset, max(prev.end, start.offset))

    def error(self, message: str, tok: Token | None = None) -> LfError:
        return LfError(Diagnostic("error", message, self.loc(tok)))

    def expected(self, what: str) -> LfError:
        return self.error(f"expected {what}, found {_describe(self.tok)}")

    def at(self, text: str) -> bool:
        """The current token is the operator or word `text`."""
        t = self.tok
        return t.text == text and t.kind in ("op", "id")

    def at_kw(self, *words: str) -> bool:
        return self.tok.kind == "id" and self.tok.text in words

    def at_name(self) -> bool:
        """The current token is an identifier that is not a keyword."""
        return self.tok.kind == "id" and self.tok.text not in KEYWORDS

    def accept(self, text: str) -> Token | None:
        return self.advance() if self.at(text) else None

    def expect(self, text: str, context: str = "") -> Token:
        if self.at(text):
            return self.advance()
        where = f" {context}" if context else ""
        raise self.expected(f"'{text}'{where}")

    def name(self, what: str = "a name") -> Token:
        """An identifier that LF does not reserve."""
        t = self.tok
        if t.kind != "id":
            raise self.expected(what)
        if t.text in KEYWORDS:
            raise self.error(f"expected {what}, found '{t.text}', which is a keyword in LF and cannot be a name")
        return self.advance()

    def code(self, what: str = "a code block '{= ... =}'") -> ast.Code:
        if self.tok.kind != "code":
            raise self.expected(what)
        tok = self.advance()
        return ast.Code(tok.text, self.lexer.loc(tok.offset + 2, tok.end - 2))

    def end_member(self) -> None:
        """The optional `;` after a member."""
        self.accept(";")

    def adjacent_text(self, stop: set[str]) -> str:
        """Concatenate tokens written without spaces between them (hosts, paths)."""
        parts = [self.advance().text]
        end = self.toks[self.i - 1].end
        while (self.tok.kind in ("id", "int", "float", "op") and self.tok.offset == end
               and self.tok.text not in stop):
            parts.append(self.tok.text)
            end = self.advance().end
        return "".join(parts)

    # ------------------------------------------------------------ file level

    def parse_model(self) -> ast.Model:
        start = self.loc()
        target = self.parse_target_decl() if self.at_kw("target") else None
        imports: list[ast.Import] = []
        preambles: list[ast.Preamble] = []
        reactors: list[ast.Reactor] = []
        while self.at_kw("import"):
            imports.append(self.parse_import())
        while self.at_preamble():
            preambles.append(self.parse_preamble())
        while self.tok.kind != "eof":
            if self.at_kw("target"):
                raise self.error("the target declaration must come first in the file")
            if self.at_kw("import"):
                raise self.error("imports must come before the file's preambles and reactors")
            if self.at_preamble():
                raise self.error("a file-level preamble must come before the file's reactors")
            reactors.append(self.parse_reactor())
        if not reactors:
            raise self.expected("a reactor declaration ('reactor', 'main reactor' or 'federated reactor')")
        return ast.Model(self.path, target, imports, preambles, reactors, self.span(start))

    def parse_target_decl(self) -> ast.TargetDecl:
        start = self.loc()
        self.expect("target")
        name = self.name("a target name after 'target'").text
        config = self.parse_key_value_pairs() if self.at("{") else None
        self.accept(";")
        return ast.TargetDecl(name, config, self.span(start))

    def parse_import(self) -> ast.Import:
        start = self.loc()
        self.expect("import")
        reactors = [self.parse_imported_reactor()]
        while self.accept(","):
            reactors.append(self.parse_imported_reactor())
        if not self.accept("from"):
            raise self.expected("',' or 'from' in the import")
        uri = package = None
        if self.tok.kind == "string":
            uri = self.advance().text
        elif self.accept("<"):
            package = self.parse_package_path()
            self.expect(">", "to close the package path")
        else:
            raise self.expected('a file name in quotes ("file.lf") or a package path <package/file.lf>')
        self.accept(";")
        return ast.Import(reactors, self.span(start), uri, package)

    def parse_imported_reactor(self) -> ast.ImportedReactor:
        start = self.loc()
        name = self.name("the name of a reactor to import").text
        alias = self.name("a name after 'as'").text if self.accept("as") else None
        return ast.ImportedReactor(name, self.span(start), alias)

    def parse_package_path(self) -> str:
        """PackagePath: names, numbers, `.`, `_`, `-` and `/` (or `\\`) up to the closing `>`."""
        parts: list[str] = []
        while self.tok.kind in ("id", "int", "float") or self.tok.text in (".", "-", "/", "\\", ":\\"):
            parts.append(self.advance().text)
        if not parts:
            raise self.expected("a package path such as <package/file.lf>")
        return "".join(parts)

    def at_preamble(self) -> bool:
        return self.at_kw("preamble") or (self.at_kw("private", "public") and self.peek().text == "preamble")

    def parse_preamble(self) -> ast.Preamble:
        start = self.loc()
        visibility = self.advance().text if self.at_kw("private", "public") else None
        self.expect("preamble")
        code = self.code("a code block '{= ... =}' after 'preamble'")
        return ast.Preamble(code, self.span(start), visibility)

    # ------------------------------------------------------------ reactors

    def parse_reactor(self) -> ast.Reactor:
        attributes = self.parse_attributes()
        start = self.loc()
        main = federated = realtime = False
        while self.at_kw("main", "federated", "realtime"):
            word = self.tok.text
            if (word == "realtime" and realtime) or (word != "realtime" and (main or federated)):
                raise self.error(f"unexpected '{word}' before 'reactor'")
            main |= word == "main"
            federated |= word == "federated"
            realtime |= word == "realtime"
            self.advance()
        if not self.at_kw("reactor"):
            raise self.expected("'reactor'")
        self.advance()
        reactor = ast.Reactor(None, start, main=main, federated=federated, realtime=realtime,
                              attributes=attributes)
        if self.at_name():
            reactor.name = self.advance().text
        if self.accept("<"):
            reactor.type_params.append(self.parse_type_parm())
            while self.accept(","):
                reactor.type_params.append(self.parse_type_parm())
            self.expect(">", "to close the type parameters")
        if self.accept("("):
            reactor.parameters.append(self.parse_parameter())
            while self.accept(","):
                reactor.parameters.append(self.parse_parameter())
            if not self.accept(")"):
                raise self.expected("',' or ')' in the parameter list")
        if self.accept("at"):
            reactor.host = self.parse_host()
        if self.accept("extends"):
            reactor.superclasses.append(self.parse_superclass())
            while self.accept(","):
                reactor.superclasses.append(self.parse_superclass())
        if not self.at("{"):
            raise self.expected("'{' to open the reactor body")
        open_brace = self.advance()
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.error(f"unexpected end of file: the reactor body opened at line {open_brace.line} "
                                 f"is not closed with '}}'")
            self.parse_member(reactor, reactor)
        self.expect("}")
        reactor.loc = self.span(start)
        return reactor

    def parse_type_parm(self) -> str:
        if self.tok.kind == "code":
            return self.code().text
        words = [self.name("a type parameter").text]
        while self.at_name():
            words.append(self.advance().text)
        return " ".join(words)

    def parse_superclass(self) -> ast.SuperClassRef:
        tok = self.name("a reactor class name after 'extends'")
        return ast.SuperClassRef(tok.text, self.loc(tok))

    def parse_host(self) -> ast.Host:
        """Host: `[user@]address[:port]`, kept as written (written without spaces)."""
        start = self.loc()
        if self.tok.kind not in ("id", "int", "float") and not self.at("[") and not self.at("::"):
            raise self.expected("a host name or address after 'at'")
        return ast.Host(self.adjacent_text({";", "{", ",", "(", ")"}), self.span(start))

    def parse_member(self, reactor: ast.Reactor, into: ast.Reactor | ast.Mode) -> None:
        """One member of a reactor or mode body, appended to `into`."""
        in_mode = isinstance(into, ast.Mode)
        attributes = self.parse_attributes()
        start = self.loc()
        t = self.tok
        word = t.text if t.kind == "id" else None
        nxt = self.peek().text
        only_reactor = None  # which kind of member, when it may not be declared in a mode
        if t.kind == "id" and nxt == "=":
            # `name = new C()`; a keyword as the name gets its own message from `name`.
            into.instantiations.append(self.parse_instantiation(start, attributes))
            return
        if self.at_preamble():
            only_reactor = "a preamble"
        elif word == "method" or (word == "const" and nxt == "method"):
            only_reactor = "a method"
        elif word == "input" or (word == "mutable" and nxt == "input"):
            only_reactor = "an input"
        elif word == "output":
            only_reactor = "an output"
        elif word == "mode" or (word == "initial" and nxt == "mode"):
            only_reactor = "a mode"
        if only_reactor and in_mode:
            raise self.error(f"{only_reactor} cannot be declared inside a mode; declare it in the reactor")
        if attributes and only_reactor in ("a preamble", "a method", "a mode"):
            raise LfError(Diagnostic("error", f"{only_reactor} cannot have attributes", attributes[0].loc))
        if self.at_preamble():
            reactor.preambles.append(self.parse_preamble())
        elif word == "state" or (word == "reset" and nxt == "state"):
            into.state_vars.append(self.parse_state_var(start, attributes))
        elif only_reactor == "a method":
            reactor.methods.append(self.parse_method(start))
        elif only_reactor in ("an input", "an output"):
            port = self.parse_port(start, attributes)
            (reactor.inputs if port.is_input else reactor.outputs).append(port)
        elif word == "timer":
            into.timers.append(self.parse_timer(start, attributes))
        elif word == "action" or (word in ("logical", "physical") and nxt == "action"):
            into.actions.append(self.parse_action(start, attributes))
        elif word in ("reaction", "mutation"):
            into.reactions.append(self.parse_reaction(start, attributes))
        elif word == "watchdog":
            into.watchdogs.append(self.parse_watchdog(start, attributes))
        elif only_reactor == "a mode":
            reactor.modes.append(self.parse_mode(reactor, start))
        elif self.at_name() or self.at("(") or self.at_kw("interleaved") or (
                t.kind == "id" and nxt in (".", ",", "->", "~>")):
            into.connections.append(self.parse_connection(start, attributes))
        else:
            if word == "reset":
                raise self.error("expected 'state' after 'reset' (a 'reset state' variable)", self.peek())
            where, members = ("mode", _MODE_MEMBERS) if in_mode else ("reactor", _MEMBERS)
            raise self.expected(f"a {where} member ({members}) or '}}'")

    def parse_attributes(self) -> list[ast.Attribute]:
        out = []
        while self.at("@"):
            out.append(self.parse_attribute())
        return out

    def parse_attribute(self) -> ast.Attribute:
        start = self.loc()
        self.expect("@")
        name = self.name("an attribute name after '@'").text
        params: list[ast.AttrParam] = []
        if self.accept("("):
            while not self.at(")"):
                params.append(self.parse_attr_parm())
                if not self.accept(","):
                    break
            if not self.accept(")"):
                raise self.expected("',' or ')' in the attribute")
        return ast.Attribute(name, params, self.span(start))

    def parse_attr_parm(self) -> ast.AttrParam:
        start = self.loc()
        name = None
        if self.at_name():
            name = self.advance().text
            if not self.accept("="):
                return ast.AttrParam(name, None, self.span(start))
        value = self.parse_expression()
        if not isinstance(value, ast.Literal | ast.Time):
            raise self.error("an attribute's value must be a literal (string, number, boolean) or a time",
                             self.toks[self.i - 1])
        return ast.AttrParam(name, value, self.span(start))

    def parse_parameter(self) -> ast.Parameter:
        attributes = self.parse_attributes()
        start = self.loc()
        name = self.name("a parameter name").text
        type_ = self.parse_type() if self.accept(":") else None
        init = self.parse_initializer() if self.at_initializer() else None
        return ast.Parameter(name, type_, init, self.span(start), attributes)

    def parse_state_var(self, start: Loc, attributes: list[ast.Attribute]) -> ast.StateVar:
        reset = bool(self.accept("reset"))
        self.expect("state")
        name = self.name("a state variable name").text
        type_ = self.parse_type() if self.accept(":") else None
        init = self.parse_initializer() if self.at_initializer() else None
        self.end_member()
        return ast.StateVar(name, type_, init, self.span(start), reset, attributes)

    def at_initializer(self) -> bool:
        return self.at("=") or self.at("(") or self.at("{")

    def parse_initializer(self) -> ast.Initializer:
        start = self.loc()
        if self.accept("="):
            return ast.Initializer(self.parse_expression(), True, self.span(start))
        if self.at("(") or self.at("{"):
            return ast.Initializer(self.parse_list_expression(), False, self.span(start))
        raise self.expected("'=' and a value")

    def parse_method(self, start: Loc) -> ast.Method:
        const = bool(self.accept("const"))
        self.expect("method")
        name = self.name("a method name").text
        self.expect("(", "after the method name")
        args: list[ast.MethodArgument] = []
        if not self.at(")"):
            args.append(self.parse_method_argument())
            while self.accept(","):
                args.append(self.parse_method_argument())
        if not self.accept(")"):
            raise self.expected("',' or ')' in the method's arguments")
        ret = self.parse_type() if self.accept(":") else None
        code = self.code("the method's body '{= ... =}'")
        self.end_member()
        return ast.Method(name, args, ret, code, self.span(start), const)

    def parse_method_argument(self) -> ast.MethodArgument:
        start = self.loc()
        name = self.name("an argument name").text
        type_ = self.parse_type() if self.accept(":") else None
        return ast.MethodArgument(name, type_, self.span(start))

    def parse_port(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Port:
        """Input and Output."""
        mutable = bool(self.accept("mutable"))
        is_input = self.advance().text == "input"
        width = self.parse_width_spec() if self.at("[") else None
        name = self.name("an input name" if is_input else "an output name").text
        type_ = self.parse_type() if self.accept(":") else None
        self.end_member()
        return ast.Port(name, is_input, width, type_, self.span(start), mutable, attributes)

    def parse_timer(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Timer:
        self.expect("timer")
        name = self.name("a timer name").text
        offset = period = None
        if self.accept("("):
            offset = self.parse_expression()
            if self.accept(","):
                period = self.parse_expression()
            if not self.accept(")"):
                raise self.expected("',' or ')' after the timer's offset and period")
        self.end_member()
        return ast.Timer(name, offset, period, self.span(start), attributes)

    def parse_action(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Action:
        origin = self.advance().text if self.at_kw("logical", "physical") else "logical"
        self.expect("action")
        name = self.name("an action name").text
        min_delay = min_spacing = None
        policy = None
        if self.accept("("):
            min_delay = self.parse_expression()
            if self.accept(","):
                min_spacing = self.parse_expression()
                if self.accept(","):
                    if self.tok.kind != "string":
                        raise self.expected('a policy in quotes ("defer", "drop", "replace" or "update")')
                    policy = self.advance().text
            if not self.accept(")"):
                raise self.expected("',' or ')' in the action's arguments")
        type_ = self.parse_type() if self.accept(":") else None
        self.end_member()
        return ast.Action(name, origin, min_delay, min_spacing, policy, type_, self.span(start), attributes)

    def parse_reaction(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Reaction:
        mutation = self.advance().text == "mutation"
        name = self.advance().text if self.at_name() else None
        self.expect("(", "to open the reaction's triggers")
        triggers: list[ast.TriggerRef] = []
        if not self.at(")"):
            triggers.append(self.parse_trigger_ref())
            while self.accept(","):
                triggers.append(self.parse_trigger_ref())
        if not self.accept(")"):
            raise self.expected("',' or ')' in the reaction's triggers")
        sources: list[ast.VarRef] = []
        if self.at_name() or self.at_kw("interleaved"):
            sources.append(self.parse_var_ref())
            while self.accept(","):
                sources.append(self.parse_var_ref())
        effects: list[ast.VarRef] = []
        if self.accept("->"):
            effects.append(self.parse_var_ref_or_mode_transition())
            while self.accept(","):
                effects.append(self.parse_var_ref_or_mode_transition())
        code = self.code() if self.tok.kind == "code" else None
        stp = None
        if self.at_kw("STP", "STAA"):
            stp = self.parse_stp()
        elif self.at_kw("tardy"):
            stp = self.parse_tardy()
        deadline = self.parse_deadline() if self.at_kw("deadline") else None
        self.end_member()
        return ast.Reaction(triggers, sources, effects, code, self.span(start), name, mutation, stp,
                            deadline, attributes)

    def parse_stp(self) -> ast.STPHandler:
        start = self.loc()
        keyword = self.advance().text
        self.expect("(", f"after '{keyword}'")
        value = self.parse_expression()
        self.expect(")", f"after the {keyword} value")
        code = self.code(f"the {keyword} handler '{{= ... =}}'")
        return ast.STPHandler(keyword, value, code, self.span(start))

    def parse_tardy(self) -> ast.STPHandler:
        start = self.loc()
        self.expect("tardy")
        code = self.code() if self.tok.kind == "code" else None
        return ast.STPHandler("tardy", None, code, self.span(start))

    def parse_deadline(self) -> ast.Deadline:
        start = self.loc()
        self.expect("deadline")
        self.expect("(", "after 'deadline'")
        delay = self.parse_expression()
        self.expect(")", "after the deadline")
        return ast.Deadline(delay, self.code("the deadline handler '{= ... =}'"), self.span(start))

    def parse_trigger_ref(self) -> ast.TriggerRef:
        if self.at_kw("startup", "shutdown", "reset"):
            tok = self.advance()
            return ast.BuiltinTrigger(tok.text, self.loc(tok))
        return self.parse_var_ref()

    def parse_var_ref_or_mode_transition(self) -> ast.VarRef:
        if self.at_kw("reset", "history"):
            start = self.loc()
            transition = self.advance().text
            self.expect("(", f"after '{transition}' (a mode transition '{transition}(Mode)')")
            mode = self.name("a mode name").text
            self.expect(")", "after the mode name")
            return ast.VarRef(mode, self.span(start), transition=transition)
        return self.parse_var_ref()

    def parse_var_ref(self) -> ast.VarRef:
        start = self.loc()
        interleaved = bool(self.at_kw("interleaved"))
        if interleaved:
            self.advance()
            self.expect("(", "after 'interleaved'")
        first = self.name("a port, action, timer or instance name")
        container, variable = None, first.text
        if self.accept("."):
            container = first.text
            variable = self.name(f"a port name after '{first.text}.'").text
        if interleaved:
            self.expect(")", "to close 'interleaved('")
        alias = self.name("a name after 'as'").text if self.accept("as") else None
        return ast.VarRef(variable, self.span(start), container, interleaved, alias)

    def parse_watchdog(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Watchdog:
        self.expect("watchdog")
        name = self.name("a watchdog name").text
        self.expect("(", "after the watchdog's name")
        timeout = self.parse_expression()
        self.expect(")", "after the watchdog's timeout")
        effects: list[ast.VarRef] = []
        if self.accept("->"):
            effects.append(self.parse_var_ref_or_mode_transition())
            while self.accept(","):
                effects.append(self.parse_var_ref_or_mode_transition())
        code = self.code("the watchdog's handler '{= ... =}'")
        return ast.Watchdog(name, timeout, effects, code, self.span(start), attributes)

    def parse_mode(self, reactor: ast.Reactor, start: Loc) -> ast.Mode:
        initial = bool(self.accept("initial"))
        self.expect("mode")
        name = self.advance().text if self.at_name() else None
        mode = ast.Mode(name, start, initial)
        if not self.at("{"):
            raise self.expected("'{' to open the mode body")
        open_brace = self.advance()
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.error(f"unexpected end of file: the mode body opened at line {open_brace.line} "
                                 f"is not closed with '}}'")
            self.parse_member(reactor, mode)
        self.expect("}")
        mode.loc = self.span(start)
        return mode

    def parse_instantiation(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Instantiation:
        name = self.name("an instance name").text
        self.expect("=")
        if not self.at_kw("new"):
            raise self.expected(f"'new' after '{name} =' (an instance is declared as '{name} = new Class()')")
        self.advance()
        width = self.parse_width_spec() if self.at("[") else None
        cls_tok = self.name("a reactor class name after 'new'")
        type_args: list[ast.TypeRef] = []
        if self.accept("<"):
            type_args.append(self.parse_type())
            while self.accept(","):
                type_args.append(self.parse_type())
            self.expect(">", "to close the type arguments")
        self.expect("(", f"after '{cls_tok.text}' (parameters in parentheses, '()' for none)")
        assignments: list[ast.Assignment] = []
        if not self.at(")"):
            assignments.append(self.parse_assignment())
            while self.accept(","):
                assignments.append(self.parse_assignment())
        if not self.accept(")"):
            raise self.expected("',' or ')' in the parameter assignments")
        host = None
        if self.accept("at"):
            host = self.parse_host()
            self.expect(";", f"after the host of instance '{name}'")
        else:
            self.end_member()
        return ast.Instantiation(name, cls_tok.text, width, assignments, self.span(start),
                                 self.loc(cls_tok), type_args, host, attributes)

    def parse_assignment(self) -> ast.Assignment:
        start = self.loc()
        name = self.name("a parameter name").text
        if not self.at_initializer():
            raise self.expected(f"'=' after parameter name '{name}'")
        return ast.Assignment(name, self.parse_initializer(), self.span(start))

    def parse_connection(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Connection:
        iterated = False
        if self.accept("("):
            left = self.parse_var_ref_list()
            self.expect(")", "to close the parenthesised ports")
            iterated = bool(self.accept("+"))
        else:
            left = self.parse_var_ref_list()
        if self.accept("->"):
            physical = False
        elif self.accept("~>"):
            physical = True
        else:
            raise self.expected("'->' or '~>' in a connection")
        right = self.parse_var_ref_list()
        delay = self.parse_expression() if self.accept("after") else None
        serializer = self.parse_serializer() if self.at_kw("serializer") else None
        self.end_member()
        return ast.Connection(left, right, self.span(start), iterated, physical, delay, serializer, attributes)

    def parse_serializer(self) -> str:
        self.expect("serializer")
        if self.tok.kind != "string":
            raise self.expected('a serializer in quotes ("native", "proto", "ROS2" or "pickle")')
        return self.advance().text

    def parse_var_ref_list(self) -> list[ast.VarRef]:
        refs = [self.parse_var_ref()]
        while self.accept(","):
            refs.append(self.parse_var_ref())
        return refs

    # ------------------------------------------------------------ types and widths

    def parse_type(self) -> ast.TypeRef:
        start = self.loc()
        if self.tok.kind == "code":
            return ast.TypeRef(self.code().text, start)
        if self.at_kw("time"):
            self.advance()
            return ast.TypeRef("time", self.span(start), is_time=True)
        parts = [self.parse_dotted_name()]
        if self.accept("<"):
            args = [self.parse_type().text]
            while self.accept(","):
                args.append(self.parse_type().text)
            self.expect(">", "to close the type arguments")
            parts.append("<" + ", ".join(args) + ">")
        while self.accept("*"):
            parts.append("*")
        if self.at("["):
            parts.append(self.parse_c_style_array_spec())
        return ast.TypeRef("".join(parts), self.span(start))

    def parse_dotted_name(self) -> str:
        parts = [self.name("a type").text]
        while self.at(".") or self.at("::"):
            parts.append(self.advance().text)
            parts.append(self.name("a type name").text)
        return "".join(parts)

    def parse_c_style_array_spec(self) -> str:
        self.expect("[")
        if self.accept("]"):
            return "[]"
        if self.tok.kind != "int":
            raise self.expected("an array length (a number) or ']'")
        length = self.advance().text
        self.expect("]", "after the array length")
        return f"[{length}]"

    def parse_width_spec(self) -> ast.WidthSpec:
        start = self.loc()
        self.expect("[")
        if self.accept("]"):
            return ast.WidthSpec([], self.span(start), variable_length=True)
        terms = [self.parse_width_term()]
        while self.accept("+"):
            terms.append(self.parse_width_term())
        if not self.accept("]"):
            raise self.expected("'+' or ']' in the width")
        return ast.WidthSpec(terms, self.span(start))

    def parse_width_term(self) -> ast.WidthTerm:
        start = self.loc()
        t = self.tok
        if t.kind == "int":
            self.advance()
            return ast.WidthTerm("int", int(t.text), self.span(start))
        if t.kind == "code":
            return ast.WidthTerm("code", self.code(), self.span(start))
        if self.at_kw("widthof"):
            self.advance()
            self.expect("(", "after 'widthof'")
            ref = self.parse_var_ref()
            self.expect(")", "to close 'widthof('")
            return ast.WidthTerm("widthof", ref, self.span(start))
        if self.at_name():
            self.advance()
            return ast.WidthTerm("param", t.text, self.span(start))
        raise self.expected("a width (a number, a parameter, widthof(port) or {= code =})")

    # ------------------------------------------------------------ expressions

    def parse_expression(self) -> ast.Expression:
        start = self.loc()
        t = self.tok
        if t.kind == "code":
            return ast.CodeExpr(self.code(), start)
        if t.kind == "op" and t.text in _CLOSERS:
            return self.parse_list_expression()
        if t.kind in ("string", "char"):
            self.advance()
            return ast.Literal(t.text, t.text, self.span(start))
        if t.kind == "id":
            if t.text in _BOOLEANS:
                self.advance()
                return ast.Literal(t.text, _BOOLEANS[t.text], self.span(start))
            if t.text in ("forever", "never"):
                self.advance()
                return ast.Time(0, None, self.span(start), forever=t.text == "forever", never=t.text == "never")
            if t.text not in KEYWORDS:
                self.advance()
                return ast.ParamRef(t.text, self.span(start))
        negative = False
        if self.at("-") and self.peek().kind in ("int", "float") and self.peek().offset == t.end:
            negative = True
            self.advance()
            t = self.tok
        if t.kind in ("int", "float"):
            return self.parse_number(start, negative)
        raise self.expected("a value (a number, time, string, parameter, list or {= code =})")

    def parse_number(self, start: Loc, negative: bool) -> ast.Literal | ast.Time:
        """A number, or a Time when a unit follows on the same line (INT unit in LF)."""
        t = self.advance()
        value: int | float = int(t.text) if t.kind == "int" else float(t.text)
        if negative:
            value = -value
        u = self.tok
        if u.kind == "id" and u.text not in KEYWORDS and u.line == t.line and self.peek().text not in _NOT_A_UNIT_AFTER:
            if u.text not in TIME_UNITS:
                raise self.error(f"'{_show(u.text)}' is not a time unit (LF's units are nsec, usec, msec, sec, "
                                 "min, hour, day, week, their plurals, and ns, us, ms, s, h, d, w)")
            self.advance()
            return ast.Time(value, u.text, self.span(start))
        return ast.Literal(("-" if negative else "") + t.text, value, self.span(start))

    def parse_list_expression(self) -> ast.ListExpr:
        """BracedListExpression, BracketListExpression and ParenthesisListExpression."""
        start = self.loc()
        opener = self.advance().text
        closer = _CLOSERS[opener]
        items: list[ast.Expression] = []
        while not self.at(closer):
            items.append(self.parse_expression())
            if not self.accept(","):
                break
        if not self.accept(closer):
            raise self.expected(f"',' or '{closer}' in the list")
        return ast.ListExpr(opener, items, self.span(start))

    # ------------------------------------------------------------ target properties

    def parse_key_value_pairs(self) -> ast.KeyValuePairs:
        start = self.loc()
        self.expect("{")
        pairs: list[ast.KeyValue] = []
        while not self.at("}"):
            pairs.append(self.parse_key_value_pair())
            if not self.accept(","):
                break
        if not self.accept("}"):
            raise self.expected("',' or '}' after the property")
        return ast.KeyValuePairs(pairs, self.span(start))

    def parse_key_value_pair(self) -> ast.KeyValue:
        start = self.loc()
        if self.tok.kind == "string":
            name = self.advance().text
        else:
            name = self.parse_kebab()
        self.expect(":", f"after property name '{_show(name)}'")
        return ast.KeyValue(name, self.parse_element(), self.span(start))

    def parse_kebab(self) -> str:
        """Kebab: words joined by '-' (`single-threaded`)."""
        if self.tok.kind != "id":
            raise self.expected("a property name")
        name = self.advance().text
        while self.at("-") and self.peek().kind == "id":
            self.advance()
            name += "-" + self.advance().text
        return name

    def parse_element(self) -> ast.Element:
        start = self.loc()
        t = self.tok
        if self.at("{"):
            return self.parse_key_value_pairs()
        if self.at("["):
            return self.parse_array()
        is_number = t.kind in ("int", "float") or (
            self.at("-") and self.peek().kind in ("int", "float") and self.peek().offset == t.end)
        if t.kind in ("string", "char") or is_number or (t.kind == "id" and t.text in _BOOLEANS):
            value = self.parse_expression()
            assert isinstance(value, ast.Literal | ast.Time)  # what those tokens start
            return value
        if self.at_kw("forever", "never"):
            return ast.Time(0, None, self.loc(self.advance()), forever=t.text == "forever", never=t.text == "never")
        if t.kind == "id" or self.at("/") or self.at(".") or self.at("\\") or self.at("-"):
            return self.parse_path(start)
        raise self.expected("a property value")

    def parse_array(self) -> ast.ArrayElement:
        start = self.loc()
        self.expect("[")
        items: list[ast.Element] = []
        while not self.at("]"):
            items.append(self.parse_element())
            if not self.accept(","):
                break
        if not self.accept("]"):
            raise self.expected("',' or ']' in the list")
        return ast.ArrayElement(items, self.span(start))

    def parse_path(self, start: Loc) -> ast.PathElement:
        """Path: a bare name or file path (`Decentralized`, `../lib/x.py`), written without spaces."""
        return ast.PathElement(self.adjacent_text({",", "}", "]", "{", "["}), self.span(start))
