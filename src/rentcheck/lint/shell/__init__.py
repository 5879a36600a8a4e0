"""Shell rules (RC104-RC119) on a real bash parse tree (tree-sitter-bash)."""
