"""The pre-rent static gate: checks over the files of the user's repository."""
