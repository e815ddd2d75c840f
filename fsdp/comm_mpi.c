/* MPI communicator: implementation pending in this tree. */
