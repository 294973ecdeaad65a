-- A small car dealer, made up for Loom's tests (SQLite and PostgreSQL):
-- salespersons sell cars to customers; a sale is paid in one or more
-- payments. It has joins (sales to the three others, payments to sales),
-- dates (hire dates, sale dates, payment dates) and numbers to sum.

CREATE TABLE salespersons (
  id INTEGER PRIMARY KEY,
  first_name TEXT NOT NULL,
  last_name TEXT NOT NULL,
  hired_on DATE NOT NULL
);

CREATE TABLE customers (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  city TEXT NOT NULL
);

CREATE TABLE cars (
  id INTEGER PRIMARY KEY,
  make TEXT NOT NULL,
  model TEXT NOT NULL,
  year INTEGER NOT NULL,
  list_price NUMERIC(10, 2) NOT NULL
);

CREATE TABLE sales (
  id INTEGER PRIMARY KEY,
  car_id INTEGER NOT NULL REFERENCES cars (id),
  salesperson_id INTEGER NOT NULL REFERENCES salespersons (id),
  customer_id INTEGER NOT NULL REFERENCES customers (id),
  sale_price NUMERIC(10, 2) NOT NULL,
  sale_date DATE NOT NULL
);

CREATE TABLE payments (
  id INTEGER PRIMARY KEY,
  sale_id INTEGER NOT NULL REFERENCES sales (id),
  paid_on DATE NOT NULL,
  amount NUMERIC(10, 2) NOT NULL,
  method TEXT NOT NULL
);

INSERT INTO salespersons VALUES
  (1, 'Ada', 'Moreau', '2019-03-01'),
  (2, 'Bo', 'Lindqvist', '2020-07-15'),
  (3, 'Chen', 'Hui', '2021-01-04'),
  (4, 'Dara', 'Okoye', '2022-09-12'),
  (5, 'Eli', 'Navarro', '2023-05-02'),
  (6, 'Fay', 'Quint', '2024-02-19');

INSERT INTO customers VALUES
  (1, 'Gus Ferreira', 'Lisbon'),
  (2, 'Hana Sato', 'Osaka'),
  (3, 'Ivo Petrov', 'Sofia'),
  (4, 'Jin Park', 'Busan'),
  (5, 'Kim Olsen', 'Oslo'),
  (6, 'Lea Roux', 'Lyon'),
  (7, 'Mo Haddad', 'Amman'),
  (8, 'Nia Brooks', 'Leeds');

INSERT INTO cars VALUES
  (1, 'Toyota', 'Corolla', 2023, 21000.00),
  (2, 'Toyota', 'RAV4', 2024, 31000.00),
  (3, 'Honda', 'Civic', 2023, 23500.00),
  (4, 'Ford', 'Mustang', 2022, 38000.00),
  (5, 'Tesla', 'Model 3', 2024, 41000.00),
  (6, 'Kia', 'Niro', 2023, 28000.00),
  (7, 'BMW', 'X3', 2024, 52000.00),
  (8, 'Volvo', 'XC40', 2023, 39500.00),
  (9, 'Mazda', 'CX-5', 2022, 27000.00),
  (10, 'Skoda', 'Octavia', 2024, 24500.00);

INSERT INTO sales VALUES
  (1, 1, 1, 1, 20500.00, '2024-01-08'),
  (2, 4, 1, 2, 36900.00, '2024-01-22'),
  (3, 7, 1, 3, 50500.00, '2024-02-14'),
  (4, 5, 2, 4, 40200.00, '2024-02-20'),
  (5, 2, 2, 5, 30100.00, '2024-03-03'),
  (6, 3, 3, 6, 22900.00, '2024-03-17'),
  (7, 8, 3, 7, 38800.00, '2024-04-09'),
  (8, 6, 4, 8, 27300.00, '2024-04-21'),
  (9, 9, 4, 1, 26100.00, '2024-05-06'),
  (10, 10, 5, 2, 24000.00, '2024-05-28'),
  (11, 7, 2, 6, 51000.00, '2024-06-11'),
  (12, 1, 3, 4, 20800.00, '2024-06-30'),
  (13, 5, 1, 5, 40500.00, '2024-07-19'),
  (14, 2, 5, 7, 30500.00, '2024-08-02'),
  (15, 4, 4, 3, 37200.00, '2024-08-25');

INSERT INTO payments VALUES
  (1, 1, '2024-01-08', 20500.00, 'card'),
  (2, 2, '2024-01-22', 20000.00, 'transfer'),
  (3, 2, '2024-02-22', 16900.00, 'transfer'),
  (4, 3, '2024-02-14', 50500.00, 'financing'),
  (5, 4, '2024-02-21', 40200.00, 'transfer'),
  (6, 5, '2024-03-03', 30100.00, 'card'),
  (7, 6, '2024-03-18', 22900.00, 'card'),
  (8, 7, '2024-04-09', 18800.00, 'financing'),
  (9, 7, '2024-05-09', 20000.00, 'financing'),
  (10, 8, '2024-04-21', 27300.00, 'transfer'),
  (11, 9, '2024-05-07', 26100.00, 'card'),
  (12, 10, '2024-05-28', 24000.00, 'card'),
  (13, 11, '2024-06-11', 51000.00, 'financing'),
  (14, 12, '2024-07-01', 20800.00, 'transfer'),
  (15, 13, '2024-07-19', 40500.00, 'card'),
  (16, 14, '2024-08-02', 30500.00, 'transfer'),
  (17, 15, '2024-08-26', 37200.00, 'card');
