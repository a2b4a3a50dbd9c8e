module retrygen.example/retrypolicy

go 1.24
