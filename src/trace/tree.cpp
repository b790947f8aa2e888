// TreeDef's non-template half: sizes, names and messages.
#include "ferry/tree.h"

#include <fmt/format.h>

#include "ir/echo.h"

namespace ferry::detail {

std::vector<std::string> split_field_names(std::string_view names) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = names.find(',', start);
    if (comma == std::string_view::npos) comma = names.size();
    std::string_view name = names.substr(start, comma - start);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front()))) name.remove_prefix(1);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.remove_suffix(1);
    if (!name.empty()) out.emplace_back(name);
    start = comma + 1;
  }
  return out;
}

size_t TreeDef::leaves() const {
  if (kind == Kind::leaf) return 1;
  size_t n = 0;
  for (const TreeDef& c : children) n += c.leaves();
  return n;
}

std::string TreeDef::to_string() const {
  std::string out;
  // Bounded (ir/echo.h): a model may pass a list of thousands of arrays.
  auto items = [&](bool keyed) {
    out += ir::echo_list(children.size(),
                         [&](size_t i) { return (keyed ? ir::echo(keys[i]) + ": " : std::string()) + children[i].to_string(); });
  };
  switch (kind) {
    case Kind::leaf: return "*";
    case Kind::list: out = "["; items(false); return out + "]";
    case Kind::tuple: out = "("; items(false); return out + ")";
    case Kind::map: out = "map{"; items(true); return out + "}";
    case Kind::record: out = "{"; items(true); return out + "}";
  }
  return out;
}

namespace {
void collect_paths(const TreeDef& d, const std::string& path, std::vector<std::string>& out) {
  if (d.kind == TreeDef::Kind::leaf) {
    out.push_back(path);
    return;
  }
  for (size_t i = 0; i < d.children.size(); ++i) {
    const bool keyed = d.kind == TreeDef::Kind::map || d.kind == TreeDef::Kind::record;
    std::string key = keyed ? d.keys[i] : std::to_string(i);
    collect_paths(d.children[i], path.empty() ? key : path + "." + key, out);
  }
}
}  // namespace

std::vector<std::string> TreeDef::leaf_paths() const {
  std::vector<std::string> out;
  collect_paths(*this, "", out);
  return out;
}

void structure_mismatch(const std::string& what, const std::string& path, const TreeDef& have, const std::string& wanted) {
  throw Error(ErrorCode::invalid_argument,
              fmt::format("{}{} {} {}, which is not {}", what, path.empty() ? "" : " at '" + path + "'",
                          have.kind == TreeDef::Kind::leaf ? "is" : "has the structure", have.to_string(), wanted));
}

}  // namespace ferry::detail
