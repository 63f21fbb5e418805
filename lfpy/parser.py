"""Recursive-descent parser for LF files with the Python target.

One method per rule of the official grammar (`LinguaFranca.xtext`), named after it, so that the
two can be read side by side. The first syntax error raises `LfError` with its position.
"""

from __future__ import annotations

from pathlib import Path

from lfpy import ast
from lfpy.ast import Loc
from lfpy.diagnostics import Diagnostic, LfError
from lfpy.lexer import Lexer, Token

# Every spelling of a time unit that LF accepts.
TIME_UNITS = frozenset(
    "nsec nsecs ns usec usecs us msec msecs ms sec secs second seconds s min mins minute minutes "
    "hour hours h day days d week weeks w".split()
)
_BOOLEANS = {"true": True, "True": True, "false": False, "False": False}


def parse(text: str, path: str) -> ast.Model:
    """Parse one LF file's text; raise LfError at the first syntax error."""
    parser = Parser(text, path)
    try:
        return parser.parse_model()
    except RecursionError:
        raise parser.error("expressions nested too deeply") from None


def parse_file(path: str) -> ast.Model:
    """Read (UTF-8) and parse one LF file."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode("utf-8")
        lexer = Lexer(good, path)
        raise LfError(Diagnostic("error", f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})",
                                 lexer.loc(len(good)))) from None
    return parse(text, path)


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "end of file"
    if tok.kind == "code":
        return "code block '{= ... =}'"
    if tok.kind == "string":
        return "a string"
    return repr(tok.text)


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

    def loc(self, tok: Token | None = None) -> Loc:
        tok = tok or self.tok
        return Loc(self.path, tok.line, tok.col, tok.offset, tok.end)

    def span(self, start: Loc) -> Loc:
        """`start` extended to the end of the last consumed token."""
        prev = self.toks[self.i - 1] if self.i else self.tok
        return Loc(start.file, start.line, start.col, start.offset, prev.end)

    def error(self, message: str, tok: Token | None = None) -> LfError:
        return LfError(Diagnostic("error", message, self.loc(tok)))

    def expected(self, what: str) -> LfError:
        return self.error(f"expected {what}, found {_describe(self.tok)}")

    def at(self, text: str) -> bool:
        t = self.tok
        return t.text == text and t.kind in ("op", "id")

    def at_kw(self, *words: str) -> bool:
        return self.tok.kind == "id" and self.tok.text in words

    def accept(self, text: str) -> Token | None:
        if self.at(text):
            tok = self.tok
            self.i += 1
            return tok
        return None

    def expect(self, text: str, context: str = "") -> Token:
        if self.at(text):
            tok = self.tok
            self.i += 1
            return tok
        where = f" {context}" if context else ""
        raise self.expected(f"'{text}'{where}")

    def ident(self, what: str = "a name") -> Token:
        if self.tok.kind != "id":
            raise self.expected(what)
        tok = self.tok
        self.i += 1
        return tok

    def code(self, what: str = "a code block '{= ... =}'") -> ast.Code:
        if self.tok.kind != "code":
            raise self.expected(what)
        tok = self.tok
        self.i += 1
        body_offset = tok.offset
        return ast.Code(tok.text, self.lexer.loc(body_offset, tok.end - 2))

    def adjacent_text(self, stop: set[str]) -> str:
        """Concatenate tokens written without spaces between them (hosts, paths)."""
        parts = [self.tok.text]
        end = self.tok.end
        self.i += 1
        while self.tok.kind != "eof" and self.tok.offset == end and self.tok.text not in stop:
            parts.append(self.tok.text)
            end = self.tok.end
            self.i += 1
        return "".join(parts)

    # ------------------------------------------------------------ file level

    def parse_model(self) -> ast.Model:
        start = self.loc()
        target = self.parse_target_decl() if self.at_kw("target") else None
        imports: list[ast.Import] = []
        preambles: list[ast.Preamble] = []
        reactors: list[ast.Reactor] = []
        while self.tok.kind != "eof":
            if self.at_kw("import"):
                imports.append(self.parse_import())
            elif self.at_kw("preamble") or (self.at_kw("private", "public") and self.peek().text == "preamble"):
                preambles.append(self.parse_preamble())
            elif self.at_kw("target"):
                raise self.error("the target declaration must come first in the file")
            else:
                reactors.append(self.parse_reactor())
        if not reactors:
            raise self.error("expected a reactor declaration ('reactor', 'main reactor' or "
                             "'federated reactor'), found end of file")
        return ast.Model(self.path, target, imports, preambles, reactors, self.span(start))

    def parse_target_decl(self) -> ast.TargetDecl:
        start = self.loc()
        self.expect("target")
        name = self.ident("a target name after 'target'").text
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
            raise self.expected("',' or 'from' in import")
        uri = package = None
        if self.tok.kind == "string":
            uri = self.tok.text
            self.i += 1
        elif self.accept("<"):
            if self.at(">"):
                raise self.expected("a package path")
            package = self.adjacent_text({">"})
            self.expect(">", "to close the package path")
        else:
            raise self.expected('a file name in quotes ("file.lf") or <package/path>')
        self.accept(";")
        return ast.Import(reactors, self.span(start), uri, package)

    def parse_imported_reactor(self) -> ast.ImportedReactor:
        start = self.loc()
        name = self.ident("a reactor name to import").text
        alias = self.ident("a name after 'as'").text if self.accept("as") else None
        return ast.ImportedReactor(name, self.span(start), alias)

    def parse_preamble(self) -> ast.Preamble:
        start = self.loc()
        visibility = None
        if self.at_kw("private", "public"):
            visibility = self.tok.text
            self.i += 1
        self.expect("preamble")
        code = self.code("a code block '{= ... =}' after 'preamble'")
        return ast.Preamble(code, self.span(start), visibility)

    # ------------------------------------------------------------ reactors

    def parse_reactor(self) -> ast.Reactor:
        start = self.loc()
        attributes = self.parse_attributes()
        main = federated = realtime = False
        while self.at_kw("main", "federated", "realtime"):
            word = self.tok.text
            if (word == "main" and (main or federated)) or (word == "federated" and (main or federated)):
                raise self.error(f"unexpected '{word}'")
            main |= word == "main"
            federated |= word == "federated"
            realtime |= word == "realtime"
            self.i += 1
        if not self.at_kw("reactor"):
            raise self.expected("'reactor'")
        self.i += 1
        reactor = ast.Reactor(None, start, main=main, federated=federated, realtime=realtime,
                              attributes=attributes)
        if self.tok.kind == "id" and not self.at_kw("at", "extends"):
            reactor.name = self.ident().text
        if self.accept("<"):
            reactor.type_params.append(self.parse_type_parm())
            while self.accept(","):
                reactor.type_params.append(self.parse_type_parm())
            self.expect(">", "to close the type parameters")
        if self.accept("("):
            if not self.at(")"):
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
        self.expect("{", "to open the reactor body")
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.error("unexpected end of file: the reactor body is not closed with '}'")
            self.parse_member(reactor, reactor)
        self.expect("}")
        reactor.loc = self.span(start)
        return reactor

    def parse_type_parm(self) -> str:
        if self.tok.kind == "code":
            return self.code().text
        words = [self.ident("a type parameter").text]
        while self.tok.kind == "id":
            words.append(self.ident().text)
        return " ".join(words)

    def parse_superclass(self) -> ast.SuperClassRef:
        tok = self.ident("a reactor class name after 'extends'")
        return ast.SuperClassRef(tok.text, self.loc(tok))

    def parse_host(self) -> ast.Host:
        start = self.loc()
        if self.tok.kind not in ("id", "int") and not self.at("["):
            raise self.expected("a host name or address after 'at'")
        return ast.Host(self.adjacent_text({";", "{"}), self.span(start))

    def parse_member(self, reactor: ast.Reactor, into: ast.Reactor | ast.Mode) -> None:
        """One member of a reactor or mode body, appended to `into`."""
        in_mode = isinstance(into, ast.Mode)
        start = self.loc()
        attributes = self.parse_attributes()
        t = self.tok
        word = t.text if t.kind == "id" else None
        nxt = self.peek().text
        if word in ("preamble", "private", "public") and not in_mode and (word == "preamble" or nxt == "preamble"):
            reactor.preambles.append(self.parse_preamble())
        elif word == "state" or (word == "reset" and nxt == "state"):
            into.state_vars.append(self.parse_state_var(start, attributes))
        elif (word == "method" or (word == "const" and nxt == "method")) and not in_mode:
            reactor.methods.append(self.parse_method(start))
        elif (word == "input" or (word == "mutable" and nxt == "input")) and not in_mode:
            reactor.inputs.append(self.parse_port(start, attributes))
        elif word == "output" and not in_mode:
            reactor.outputs.append(self.parse_port(start, attributes))
        elif word == "timer":
            into.timers.append(self.parse_timer(start, attributes))
        elif word == "action" or (word in ("logical", "physical") and nxt == "action"):
            into.actions.append(self.parse_action(start, attributes))
        elif word in ("reaction", "mutation") and (nxt == "(" or self.peek().kind == "id"):
            into.reactions.append(self.parse_reaction(start, attributes))
        elif word == "watchdog":
            into.watchdogs.append(self.parse_watchdog(start, attributes))
        elif (word == "mode" or (word == "initial" and nxt == "mode")) and not in_mode:
            reactor.modes.append(self.parse_mode(reactor, start))
        elif word is not None and nxt == "=" and self.peek(2).text == "new":
            into.instantiations.append(self.parse_instantiation(start, attributes))
        elif word is not None or t.text in ("(",):
            into.connections.append(self.parse_connection(start, attributes))
        else:
            where = "mode" if in_mode else "reactor"
            raise self.expected(f"a {where} member (state, input, output, timer, action, reaction, "
                                f"instance, connection, ...) or '}}'")

    def parse_attributes(self) -> list[ast.Attribute]:
        out = []
        while self.at("@"):
            out.append(self.parse_attribute())
        return out

    def parse_attribute(self) -> ast.Attribute:
        start = self.loc()
        self.expect("@")
        name = self.ident("an attribute name after '@'").text
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
        if self.tok.kind == "id" and self.peek().text == "=":
            name = self.ident().text
            self.expect("=")
        elif self.tok.kind == "id" and self.tok.text not in _BOOLEANS and self.tok.text not in ("forever", "never"):
            return ast.AttrParam(self.ident().text, None, self.span(start))
        value = self.parse_expression()
        if not isinstance(value, ast.Literal | ast.Time):
            raise self.error("an attribute value must be a literal or a time", None)
        return ast.AttrParam(name, value, self.span(start))

    def parse_parameter(self) -> ast.Parameter:
        start = self.loc()
        attributes = self.parse_attributes()
        name = self.ident("a parameter name").text
        type_ = self.parse_type() if self.accept(":") else None
        init = self.parse_initializer() if self.at("=") or self.at("(") or self.at("{") else None
        return ast.Parameter(name, type_, init, self.span(start), attributes)

    def parse_state_var(self, start: Loc, attributes: list[ast.Attribute]) -> ast.StateVar:
        reset = bool(self.accept("reset"))
        self.expect("state")
        name = self.ident("a state variable name").text
        type_ = self.parse_type() if self.accept(":") else None
        init = self.parse_initializer() if self.at("=") or self.at("(") or self.at("{") else None
        self.accept(";")
        return ast.StateVar(name, type_, init, self.span(start), reset, attributes)

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
        name = self.ident("a method name").text
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
        self.accept(";")
        return ast.Method(name, args, ret, code, self.span(start), const)

    def parse_method_argument(self) -> ast.MethodArgument:
        start = self.loc()
        name = self.ident("an argument name").text
        type_ = self.parse_type() if self.accept(":") else None
        return ast.MethodArgument(name, type_, self.span(start))

    def parse_port(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Port:
        mutable = bool(self.accept("mutable"))
        is_input = self.tok.text == "input"
        self.i += 1
        width = self.parse_width_spec() if self.at("[") else None
        name = self.ident("a port name").text
        type_ = self.parse_type() if self.accept(":") else None
        self.accept(";")
        return ast.Port(name, is_input, width, type_, self.span(start), mutable, attributes)

    def parse_timer(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Timer:
        self.expect("timer")
        name = self.ident("a timer name").text
        offset = period = None
        if self.accept("("):
            offset = self.parse_expression()
            if self.accept(","):
                period = self.parse_expression()
            if not self.accept(")"):
                raise self.expected("',' or ')' after the timer's offset and period")
        self.accept(";")
        return ast.Timer(name, offset, period, self.span(start), attributes)

    def parse_action(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Action:
        origin = "logical"
        if self.at_kw("logical", "physical"):
            origin = self.tok.text
            self.i += 1
        self.expect("action")
        name = self.ident("an action name").text
        min_delay = min_spacing = None
        policy = None
        if self.accept("("):
            min_delay = self.parse_expression()
            if self.accept(","):
                min_spacing = self.parse_expression()
                if self.accept(","):
                    if self.tok.kind != "string":
                        raise self.expected('a policy string ("defer", "drop", "replace" or "update")')
                    policy = self.tok.text
                    self.i += 1
            if not self.accept(")"):
                raise self.expected("',' or ')' in the action's arguments")
        type_ = self.parse_type() if self.accept(":") else None
        self.accept(";")
        return ast.Action(name, origin, min_delay, min_spacing, policy, type_, self.span(start), attributes)

    def parse_reaction(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Reaction:
        mutation = self.tok.text == "mutation"
        self.i += 1
        name = self.ident().text if self.tok.kind == "id" else None
        self.expect("(", "to open the reaction's triggers")
        triggers: list[ast.TriggerRef] = []
        if not self.at(")"):
            triggers.append(self.parse_trigger_ref())
            while self.accept(","):
                triggers.append(self.parse_trigger_ref())
        if not self.accept(")"):
            raise self.expected("',' or ')' in the reaction's triggers")
        sources: list[ast.VarRef] = []
        if self.tok.kind == "id" and not self.at_kw("STP", "STAA", "tardy", "deadline"):
            sources.append(self.parse_var_ref())
            while self.accept(","):
                sources.append(self.parse_var_ref())
        effects: list[ast.VarRef] = []
        if self.accept("->"):
            effects.append(self.parse_effect())
            while self.accept(","):
                effects.append(self.parse_effect())
        code = self.code() if self.tok.kind == "code" else None
        stp = None
        if self.at_kw("STP", "STAA") and self.peek().text == "(":
            stp_start = self.loc()
            keyword = self.ident().text
            self.expect("(")
            value = self.parse_expression()
            self.expect(")", f"after the {keyword} value")
            stp = ast.STPHandler(keyword, value, self.code(), self.span(stp_start))
        elif self.at_kw("tardy"):
            stp_start = self.loc()
            self.i += 1
            handler = self.code() if self.tok.kind == "code" else None
            stp = ast.STPHandler("tardy", None, handler, self.span(stp_start))
        deadline = None
        if self.at_kw("deadline"):
            d_start = self.loc()
            self.i += 1
            self.expect("(", "after 'deadline'")
            delay = self.parse_expression()
            self.expect(")", "after the deadline")
            deadline = ast.Deadline(delay, self.code("the deadline handler '{= ... =}'"), self.span(d_start))
        self.accept(";")
        return ast.Reaction(triggers, sources, effects, code, self.span(start), name, mutation, stp,
                            deadline, attributes)

    def parse_trigger_ref(self) -> ast.TriggerRef:
        if self.at_kw("startup", "shutdown", "reset") and self.peek().text in (",", ")"):
            tok = self.ident()
            return ast.BuiltinTrigger(tok.text, self.loc(tok))
        return self.parse_var_ref()

    def parse_effect(self) -> ast.VarRef:
        if self.at_kw("reset", "history") and self.peek().text == "(":
            start = self.loc()
            transition = self.ident().text
            self.expect("(")
            mode = self.ident("a mode name").text
            self.expect(")", "after the mode name")
            return ast.VarRef(mode, self.span(start), transition=transition)
        return self.parse_var_ref()

    def parse_var_ref(self) -> ast.VarRef:
        start = self.loc()
        interleaved = False
        if self.at_kw("interleaved") and self.peek().text == "(":
            self.i += 2
            interleaved = True
        first = self.ident("a port, action or timer name")
        container, variable = None, first.text
        if self.accept("."):
            container = first.text
            variable = self.ident("a port name after '.'").text
        if interleaved:
            self.expect(")", "to close 'interleaved('")
        alias = self.ident("a name after 'as'").text if self.accept("as") else None
        return ast.VarRef(variable, self.span(start), container, interleaved, alias)

    def parse_watchdog(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Watchdog:
        self.expect("watchdog")
        name = self.ident("a watchdog name").text
        self.expect("(", "after the watchdog's name")
        timeout = self.parse_expression()
        self.expect(")", "after the watchdog's timeout")
        effects: list[ast.VarRef] = []
        if self.accept("->"):
            effects.append(self.parse_effect())
            while self.accept(","):
                effects.append(self.parse_effect())
        code = self.code()
        return ast.Watchdog(name, timeout, effects, code, self.span(start), attributes)

    def parse_mode(self, reactor: ast.Reactor, start: Loc) -> ast.Mode:
        initial = bool(self.accept("initial"))
        self.expect("mode")
        name = self.ident().text if self.tok.kind == "id" else None
        mode = ast.Mode(name, start, initial)
        self.expect("{", "to open the mode body")
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.error("unexpected end of file: the mode body is not closed with '}'")
            self.parse_member(reactor, mode)
        self.expect("}")
        mode.loc = self.span(start)
        return mode

    def parse_instantiation(self, start: Loc, attributes: list[ast.Attribute]) -> ast.Instantiation:
        name = self.ident().text
        self.expect("=")
        self.expect("new")
        width = self.parse_width_spec() if self.at("[") else None
        cls_tok = self.ident("a reactor class name after 'new'")
        type_args: list[ast.TypeRef] = []
        if self.accept("<"):
            type_args.append(self.parse_type())
            while self.accept(","):
                type_args.append(self.parse_type())
            self.expect(">", "to close the type arguments")
        self.expect("(", "after the reactor class name")
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
            self.accept(";")
        else:
            self.accept(";")
        return ast.Instantiation(name, cls_tok.text, width, assignments, self.span(start),
                                 self.loc(cls_tok), type_args, host, attributes)

    def parse_assignment(self) -> ast.Assignment:
        start = self.loc()
        name = self.ident("a parameter name").text
        if not (self.at("=") or self.at("(") or self.at("{")):
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
        serializer = None
        if self.accept("serializer"):
            if self.tok.kind != "string":
                raise self.expected("a serializer name in quotes")
            serializer = self.tok.text
            self.i += 1
        self.accept(";")
        return ast.Connection(left, right, self.span(start), iterated, physical, delay, serializer, attributes)

    def parse_var_ref_list(self) -> list[ast.VarRef]:
        refs = [self.parse_var_ref()]
        while self.accept(","):
            refs.append(self.parse_var_ref())
        return refs

    # ------------------------------------------------------------ types, widths, expressions

    def parse_type(self) -> ast.TypeRef:
        start = self.loc()
        if self.tok.kind == "code":
            return ast.TypeRef(self.code().text, start)
        if self.at_kw("time"):
            self.i += 1
            return ast.TypeRef("time", self.span(start), is_time=True)
        parts = [self.ident("a type").text]
        while self.at(".") or self.at("::"):
            parts.append(self.tok.text)
            self.i += 1
            parts.append(self.ident("a type name").text)
        if self.accept("<"):
            args = [self.parse_type().text]
            while self.accept(","):
                args.append(self.parse_type().text)
            self.expect(">", "to close the type arguments")
            parts.append("<" + ", ".join(args) + ">")
        while self.accept("*"):
            parts.append("*")
        if self.at("[") and (self.peek().text == "]" or (self.peek().kind == "int" and self.peek(2).text == "]")):
            self.i += 1
            parts.append("[" + ("" if self.at("]") else self.tok.text) + "]")
            if not self.at("]"):
                self.i += 1
            self.expect("]")
        return ast.TypeRef("".join(parts), self.span(start))

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
            self.i += 1
            return ast.WidthTerm("int", int(t.text), start)
        if t.kind == "code":
            return ast.WidthTerm("code", self.code(), start)
        if t.kind == "id" and t.text == "widthof" and self.peek().text == "(":
            self.i += 2
            ref = self.parse_var_ref()
            self.expect(")", "to close 'widthof('")
            return ast.WidthTerm("widthof", ref, self.span(start))
        if t.kind == "id":
            self.i += 1
            return ast.WidthTerm("param", t.text, start)
        raise self.expected("a width (a number, a parameter, widthof(port) or {= code =})")

    def parse_expression(self) -> ast.Expression:
        start = self.loc()
        t = self.tok
        if t.kind == "code":
            return ast.CodeExpr(self.code(), start)
        if t.text in ("{", "[", "(") and t.kind == "op":
            return self.parse_list_expression()
        if t.kind in ("string", "char"):
            self.i += 1
            return ast.Literal(t.text, t.text, self.span(start))
        if t.kind == "id":
            self.i += 1
            if t.text in _BOOLEANS:
                return ast.Literal(t.text, _BOOLEANS[t.text], self.span(start))
            if t.text == "forever":
                return ast.Time(0, None, self.span(start), forever=True)
            if t.text == "never":
                return ast.Time(0, None, self.span(start), never=True)
            return ast.ParamRef(t.text, self.span(start))
        negative = False
        if self.at("-") and self.peek().kind in ("int", "float") and self.peek().offset == t.end:
            negative = True
            self.i += 1
            t = self.tok
        if t.kind in ("int", "float"):
            self.i += 1
            value: int | float = int(t.text) if t.kind == "int" else float(t.text)
            if negative:
                value = -value
            text = ("-" if negative else "") + t.text
            # A unit follows on the same line; `0` then `s = new ...` on the next line is no time.
            if (self.tok.kind == "id" and self.tok.text in TIME_UNITS and self.tok.line == t.line
                    and self.peek().text != "="):
                unit = self.ident().text
                return ast.Time(value, unit, self.span(start))
            return ast.Literal(text, value, self.span(start))
        raise self.expected("a value (a number, time, string, parameter, list or {= code =})")

    def parse_list_expression(self) -> ast.ListExpr:
        start = self.loc()
        opener = self.tok.text
        closer = {"{": "}", "[": "]", "(": ")"}[opener]
        self.i += 1
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
            raise self.expected("',' or '}' in the properties")
        return ast.KeyValuePairs(pairs, self.span(start))

    def parse_key_value_pair(self) -> ast.KeyValue:
        start = self.loc()
        if self.tok.kind == "string":
            name = self.tok.text
            self.i += 1
        else:
            name = self.ident("a property name").text
            while self.at("-") and self.peek().kind == "id":
                self.i += 1
                name += "-" + self.ident().text
        self.expect(":", f"after property name '{name}'")
        return ast.KeyValue(name, self.parse_element(), self.span(start))

    def parse_element(self) -> ast.Element:
        start = self.loc()
        t = self.tok
        if self.at("{"):
            return self.parse_key_value_pairs()
        if self.at("["):
            self.i += 1
            items: list[ast.Element] = []
            while not self.at("]"):
                items.append(self.parse_element())
                if not self.accept(","):
                    break
            if not self.accept("]"):
                raise self.expected("',' or ']' in the list")
            return ast.ArrayElement(items, self.span(start))
        if t.kind in ("int", "float", "string", "char") or (self.at("-") and self.peek().kind in ("int", "float")):
            value = self.parse_expression()
            assert isinstance(value, ast.Literal | ast.Time)
            return value
        if t.kind == "id" and (t.text in _BOOLEANS or t.text in ("forever", "never")):
            value = self.parse_expression()
            assert isinstance(value, ast.Literal | ast.Time)
            return value
        if t.kind == "id" or self.at("/") or self.at(".") or self.at("\\"):
            return ast.PathElement(self.adjacent_text({",", "}", "]"}), self.span(start))
        raise self.expected("a property value")
