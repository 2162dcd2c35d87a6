"""Result tables: the papers' tables, the BM25 reproduction table and the parameter tables, with the
notes they compute."""
