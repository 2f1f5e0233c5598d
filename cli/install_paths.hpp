#pragma once
// Where the bundled studies, plot.py and the Python wrapper are: share/sinkgrad/ next to the
// installed binary (`cmake --install`), else the source tree this binary was built from.

#include <string>

namespace sinkgrad::cli {

// "<prefix>/share/sinkgrad" when this binary runs from <prefix>/bin and that folder exists;
// empty otherwise (a build-tree binary).
std::string installed_share_directory();

// The folder holding the bundled studies (*.ini) and plot.py: "<share>/studies" and "<share>"
// when installed, "<source>/experiments" for a build-tree binary.
std::string studies_directory();
std::string plot_script();

}  // namespace sinkgrad::cli
