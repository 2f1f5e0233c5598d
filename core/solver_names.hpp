#pragma once
// What a solver or option name may be, checked when a solver is registered (built-in or
// plugin): the names are typed on command lines (`--option key=value`), written in definition
// files (`[solver.NAME]`, `use = a, b`), listed by `sinkgrad solvers` on a terminal and stored
// in logs, so a name with a separator, a blank or a control character (an escape sequence
// clears the terminal) would be misread or do harm in one of those places.

#include <string>

#include "core/backward_solver.hpp"

namespace sinkgrad {

// Empty when `name` is a valid solver name (option == false) or option name; otherwise why not.
// Valid: 1 to 64 printable ASCII characters other than blanks and = , / \ : ; # ' " ( ) [ ]
// (and . in an option name, which a definition's "solver.NAME.option" key splits at); a
// solver may not be named "all", which `use = all` reserves.
std::string name_problem(const std::string& name, bool option);

// The text shown for a name in messages: printable ASCII as is, every other byte as \xNN.
std::string visible_name(const std::string& name);

// The same for a message from outside code (a plugin's): blanks kept, control bytes as \xNN.
std::string visible_text(const std::string& text);

// Throws Error naming the bad name (visible_name) when the solver's name or an option's name is
// invalid, an option name is given twice, a description holds a control character (an escape
// sequence would act on the terminal of `sinkgrad solvers`), or an option's bounds, choices or
// default are inconsistent.
void check_solver_info(const SolverInfo& info);

}  // namespace sinkgrad
